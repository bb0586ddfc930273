// Destination pixels in an RGBA32F storage texture holding f16 values: an RGBA8 blur's
// intermediate where it is a texture (see dst_texture.wgsl). Each value goes through the same
// flush and pack2x16float as io/dst_half.wgsl, so a tile whose intermediate is a texture and one whose
// intermediate is a buffer of f16 compute the same pixels (tiled == untiled).
@group(0) @binding(1) var dst: texture_storage_2d<rgba32float, write>;

fn store_dst(i: u32, v: vec4<f32>) {
    let at = vec2<u32>(i & (r.dst_stride - 1u), i >> countTrailingZeros(r.dst_stride));
    let f = flush_below_f16_normal(v);
    let half = vec2<u32>(pack2x16float(f.xy), pack2x16float(f.zw));
    textureStore(dst, at, vec4<f32>(unpack2x16float(half.x), unpack2x16float(half.y)));
}
