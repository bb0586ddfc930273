// Source pixels as RGBA32F: one float4 per pixel.
typedef float4 src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    return src[i];
}
