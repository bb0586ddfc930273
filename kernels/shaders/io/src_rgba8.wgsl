// Source pixels as RGBA8: one u32 per pixel, R in the low byte, read as [0, 1] floats.
@group(0) @binding(0) var<storage, read_write> src: array<u32>;

fn load_src(i: u32) -> vec4<f32> {
    return unpack4x8unorm(src[i]);
}

// What load_src_raw gives for 1.0: the blur reads channels as 0..255 (io/bits.wgsl).
const SRC_UNIT: f32 = 255.0;

fn load_src_raw(i: u32) -> vec4<f32> {
    return bytes_to_f32(src[i]);
}

// Raw reads need no tables here (see src_srgba8.wgsl's prepare_src).
fn prepare_src(local: u32) {}
