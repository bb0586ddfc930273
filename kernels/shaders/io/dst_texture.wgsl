// Destination pixels in an RGBA32F storage texture, written with textureStore: the blur's
// intermediate (see src_texture.wgsl). Pixel i is texel (i mod stride, i / stride) with
// `r.dst_stride` a power of two.
@group(0) @binding(1) var dst: texture_storage_2d<rgba32float, write>;

fn store_dst(i: u32, v: vec4<f32>) {
    let at = vec2<u32>(i & (r.dst_stride - 1u), i >> countTrailingZeros(r.dst_stride));
    textureStore(dst, at, v);
}
