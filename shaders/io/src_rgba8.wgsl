// Source pixels as RGBA8: one u32 per pixel, R in the low byte, read as [0, 1] floats.
@group(0) @binding(0) var<storage, read_write> src: array<u32>;

fn load_src(i: u32) -> vec4<f32> {
    return unpack4x8unorm(src[i]);
}
