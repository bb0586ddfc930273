// Copies a region, converting between pixel formats (RGBA8 <-> RGBA32F) through the io
// functions composed in front: dst pixel (x, y) comes from src pixel (x + ox, y + oy). Bindings:
// src, dst (read_write, see scale.wgsl), then the params (shaders/params/image.wgsl), whose
// region the dispatch function checks lies inside both images.

@group(0) @binding(2) var<uniform> r: ImageParams;

@compute @workgroup_size(16, 16)
fn copy(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    store_dst(id.y * r.dst_stride + id.x, load_src((id.y + r.oy) * r.src_stride + id.x + r.ox));
}
