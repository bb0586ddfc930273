// Source pixels as RGBA16: four little-endian u16 per pixel, read as two u32 words (WGSL has no
// 16-bit integers), R | G << 16 and B | A << 16, as [0, 1] floats (v / 65535).
@group(0) @binding(0) var<storage, read_write> src: array<vec2<u32>>;

fn load_src(i: u32) -> vec4<f32> {
    let p = src[i];
    return vec4<f32>(vec4<u32>(p.x & 0xffffu, p.x >> 16u, p.y & 0xffffu, p.y >> 16u)) / 65535.0;
}

// What load_src_raw gives for 1.0: the blur reads channels as 0..65535 (io/bits.wgsl).
const SRC_UNIT: f32 = 65535.0;

fn load_src_raw(i: u32) -> vec4<f32> {
    let p = src[i];
    return vec4<f32>(shorts_to_f32(p.x), shorts_to_f32(p.y));
}

// Raw reads need no tables here (see src_srgba8.wgsl's prepare_src).
fn prepare_src(local: u32) {}
