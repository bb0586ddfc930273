// Source pixels as four f16 (an RGBA8 blur's intermediate), two u32 words per pixel: R | G << 16
// and B | A << 16, each half an IEEE binary16 (pack2x16float). Values stay in [0, 1] there, where
// f16 holds 11 significant bits: under a quarter of an 8-bit level.
@group(0) @binding(0) var<storage, read_write> src: array<vec2<u32>>;

fn load_src(i: u32) -> vec4<f32> {
    let w = src[i];
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}
