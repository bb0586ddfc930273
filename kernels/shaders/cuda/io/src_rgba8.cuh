// Source pixels as RGBA8 (one u32 per pixel, R in the low byte), read as [0, 1] floats like
// WGSL's unpack4x8unorm.
typedef unsigned src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    unsigned v = src[i];
    return make_float4(unorm8(v & 255u), unorm8((v >> 8) & 255u),
                       unorm8((v >> 16) & 255u), unorm8(v >> 24));
}

// What load_src_raw gives for 1.0 (see io/src_rgba8.wgsl).
constexpr float SRC_UNIT = 255.0f;

__device__ __forceinline__ float4 load_src_raw(BUF(src_t) src, unsigned i) {
    return bytes_to_f32(src[i]);
}

// Raw reads need no tables here (see io/src_srgba8.cuh's prepare_src).
__device__ __forceinline__ void prepare_src(unsigned) {}
