// Destination pixels as RGBA8: clamped to [0, 1] and rounded to nearest, u8(0.5 + 255 v).
typedef unsigned dst_t;

__device__ __forceinline__ unsigned quantize(float v) {
    return unsigned(floorf(fminf(fmaxf(v, 0.0f), 1.0f) * 255.0f + 0.5f));
}

__device__ __forceinline__ void store_dst(BUF(dst_t) dst, unsigned i, float4 v) {
    dst[i] = quantize(v.x) | (quantize(v.y) << 8) | (quantize(v.z) << 16) | (quantize(v.w) << 24);
}
