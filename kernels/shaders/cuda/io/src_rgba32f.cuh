// Source pixels as RGBA32F: one float4 per pixel.
typedef float4 src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    return src[i];
}

// What load_src_raw gives for 1.0: raw reads are load_src's here.
constexpr float SRC_UNIT = 1.0f;

__device__ __forceinline__ float4 load_src_raw(BUF(src_t) src, unsigned i) {
    return load_src(src, i);
}

// Raw reads need no tables here (see io/src_srgba8.cuh's prepare_src).
__device__ __forceinline__ void prepare_src(unsigned) {}
