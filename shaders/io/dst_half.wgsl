// Destination pixels as four f16 (see src_half.wgsl).
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

fn store_dst(i: u32, v: vec4<f32>) {
    dst[i] = vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));
}
