// Destination pixels as RGBA16 (two u32 words: R | G << 16, B | A << 16): clamped to [0, 1] and
// rounded to nearest, u16(0.5 + 65535 v).
typedef uint2 dst_t;

__device__ __forceinline__ unsigned quantize16(float v) {
    return unsigned(floorf(fminf(fmaxf(v, 0.0f), 1.0f) * 65535.0f + 0.5f));
}

__device__ __forceinline__ void store_dst(BUF(dst_t) dst, unsigned i, float4 v) {
    dst[i] = make_uint2(quantize16(v.x) | (quantize16(v.y) << 16), quantize16(v.z) | (quantize16(v.w) << 16));
}
