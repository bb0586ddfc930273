// RGBA32F to RGBA8 (clamped to [0, 1], rounded to nearest: u8(0.5 + 255 v)), over a region as
// in image_unpack.wgsl.

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

@group(0) @binding(0) var<storage, read_write> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> r: Region;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    let v = clamp(src[(id.y + r.oy) * r.src_stride + id.x + r.ox], vec4<f32>(0.0), vec4<f32>(1.0));
    let q = vec4<u32>(floor(v * 255.0 + 0.5));
    dst[id.y * r.dst_stride + id.x] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
}
