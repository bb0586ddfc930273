// Destination pixels as four f16 (see src_half.wgsl), values below f16's smallest normal (2^-14,
// under 1/64 of an 8-bit level) flushed to 0 so that src_half.wgsl's raw reads are exact.
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

fn store_dst(i: u32, v: vec4<f32>) {
    let f = flush_below_f16_normal(v);
    dst[i] = vec2<u32>(pack2x16float(f.xy), pack2x16float(f.zw));
}
