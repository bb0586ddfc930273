// Destination pixels as four f16 (see io/src_half.cuh), rounded to nearest even, values below
// f16's smallest normal flushed to 0 (see io/dst_half.wgsl).
typedef uint2 dst_t;

__device__ __forceinline__ unsigned float_to_half_bits(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(flush_below_f16_normal(f)));
    return h;
}

__device__ __forceinline__ void store_dst(BUF(dst_t) dst, unsigned i, float4 v) {
    dst[i] = make_uint2(float_to_half_bits(v.x) | (float_to_half_bits(v.y) << 16),
                        float_to_half_bits(v.z) | (float_to_half_bits(v.w) << 16));
}
