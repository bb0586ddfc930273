// Source pixels as four f16 (an RGBA8 blur's intermediate), like io/src_half.wgsl: two u32
// words per pixel, R | G << 16 and B | A << 16, each half an IEEE binary16.
typedef uint2 src_t;

__device__ __forceinline__ float half_bits_to_float(unsigned bits) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)bits));
    return f;
}

__device__ __forceinline__ float4 load_src(BUF(src_t) src, unsigned i) {
    uint2 p = src[i];
    return make_float4(half_bits_to_float(p.x & 0xffffu), half_bits_to_float(p.x >> 16),
                       half_bits_to_float(p.y & 0xffffu), half_bits_to_float(p.y >> 16));
}

// What load_src_raw gives for 1.0: 2^-112 (see io/src_half.wgsl).
constexpr float SRC_UNIT = 0x1p-112f;

__device__ __forceinline__ float4 load_src_raw(BUF(src_t) src, unsigned i) {
    uint2 p = src[i];
    float2 lo = halves_to_f32_scaled(p.x), hi = halves_to_f32_scaled(p.y);
    return make_float4(lo.x, lo.y, hi.x, hi.y);
}

// Raw reads need no tables here (see io/src_srgba8.cuh's prepare_src).
__device__ __forceinline__ void prepare_src(unsigned) {}
