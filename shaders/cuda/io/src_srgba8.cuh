// Source pixels as sRGB-encoded RGBA8, read as linear light (like io/src_srgba8.wgsl).
typedef unsigned src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    unsigned v = src[i];
    return make_float4(to_linear(unorm8(v & 255u)), to_linear(unorm8((v >> 8) & 255u)),
                       to_linear(unorm8((v >> 16) & 255u)), unorm8(v >> 24));
}
