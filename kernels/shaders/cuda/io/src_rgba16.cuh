// Source pixels as RGBA16 (two u32 words per pixel: R | G << 16, B | A << 16), read as [0, 1]
// floats, v / 65535, like io/src_rgba16.wgsl.
typedef uint2 src_t;

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    uint2 p = src[i];
    return make_float4(unorm16(p.x & 0xffffu), unorm16(p.x >> 16),
                       unorm16(p.y & 0xffffu), unorm16(p.y >> 16));
}

// What load_src_raw gives for 1.0 (see io/src_rgba16.wgsl).
constexpr float SRC_UNIT = 65535.0f;

__device__ __forceinline__ float4 load_src_raw(BUF(src_t) src, unsigned i) {
    uint2 p = src[i];
    float2 lo = shorts_to_f32(p.x), hi = shorts_to_f32(p.y);
    return make_float4(lo.x, lo.y, hi.x, hi.y);
}

// Raw reads need no tables here (see io/src_srgba8.cuh's prepare_src).
__device__ __forceinline__ void prepare_src(unsigned) {}
