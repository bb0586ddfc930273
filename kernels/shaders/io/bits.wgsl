// Exact conversions by bit patterns, for the kernels' hot loops (the blur's raw reads): a GPU
// issues a conversion instruction (u32 → f32, f16 → f32) at an eighth of the rate of an FMA,
// these use the integer and FMA pipes. src/shaders.rs composes it into every image kernel.

// The four bytes of `v` (R in the low byte) as floats 0..255, exactly: byte b in the low
// mantissa bits of 2^23 reads as 2^23 + b.
fn bytes_to_f32(v: u32) -> vec4<f32> {
    let m = vec4<u32>(v, v >> 8u, v >> 16u, v >> 24u) & vec4<u32>(0xffu);
    return bitcast<vec4<f32>>(m | vec4<u32>(0x4b000000u)) - vec4<f32>(8388608.0);
}

// The two 16-bit halves of `v` (low first) as floats 0..65535, exactly, likewise.
fn shorts_to_f32(v: u32) -> vec2<f32> {
    let m = vec2<u32>(v & 0xffffu, v >> 16u);
    return bitcast<vec2<f32>>(m | vec2<u32>(0x4b000000u)) - vec2<f32>(8388608.0);
}

// The two IEEE binary16 halves of `v` (low first) as f32, times 2^-112: the half's sign,
// exponent and mantissa shifted into an f32's, which rebases the exponent by 112. Exact for
// finite halves whose magnitude is 0 or at least 2^-14 (normal): the f16 stores
// (io/dst_half.wgsl) flush smaller ones to 0, so the result is a normal f32 or 0 that the caller
// scales back (the blur folds 2^112 into its weights). An infinite or NaN half reads as a large
// finite value: an RGBA8 blur's intermediate holds values in [0, 1].
fn halves_to_f32_scaled(v: u32) -> vec2<f32> {
    let lo = ((v & 0x7fffu) << 13u) | ((v & 0x8000u) << 16u);
    let hi = ((v >> 3u) & 0x0fffe000u) | (v & 0x80000000u);
    return bitcast<vec2<f32>>(vec2<u32>(lo, hi));
}

// `v` with every component of magnitude below 2^-14 (f16's smallest normal) set to 0, before it
// is rounded to f16: what halves_to_f32_scaled reads back exactly.
fn flush_below_f16_normal(v: vec4<f32>) -> vec4<f32> {
    return select(v, vec4<f32>(0.0), abs(v) < vec4<f32>(6.103515625e-5));
}
