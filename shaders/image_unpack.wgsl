// RGBA8 (one u32 per pixel, R in the low byte) to RGBA32F in [0, 1], over a region: dst pixel
// (x, y) comes from src pixel (x + ox, y + oy). Bindings: src, dst (read_write, see scale.wgsl),
// then the region. The dispatch function checks that the region lies inside both images.

struct Region {
    src_w: u32,
    src_h: u32,
    src_stride: u32,
    dst_w: u32,
    dst_h: u32,
    dst_stride: u32,
    ox: u32,
    oy: u32,
}

@group(0) @binding(0) var<storage, read_write> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> r: Region;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    let p = src[(id.y + r.oy) * r.src_stride + id.x + r.ox];
    dst[id.y * r.dst_stride + id.x] = unpack4x8unorm(p);
}
