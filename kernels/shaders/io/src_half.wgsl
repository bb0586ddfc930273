// Source pixels as four f16 (an RGBA8 blur's intermediate), two u32 words per pixel: R | G << 16
// and B | A << 16, each half an IEEE binary16 (pack2x16float). Values stay in [0, 1] there, where
// f16 holds 11 significant bits: under a quarter of an 8-bit level.
@group(0) @binding(0) var<storage, read_write> src: array<vec2<u32>>;

fn load_src(i: u32) -> vec4<f32> {
    let w = src[i];
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}

// What load_src_raw gives for 1.0: the halves' bits shifted into f32s, 2^-112 times their value
// (io/bits.wgsl; the f16 stores flush values below f16's smallest normal, so this is exact).
const SRC_UNIT: f32 = 0x1p-112f;

fn load_src_raw(i: u32) -> vec4<f32> {
    let w = src[i];
    return vec4<f32>(halves_to_f32_scaled(w.x), halves_to_f32_scaled(w.y));
}

// Raw reads need no tables here (see src_srgba8.wgsl's prepare_src).
fn prepare_src(local: u32) {}
