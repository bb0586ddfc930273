// Destination pixels as sRGB-encoded RGBA8: linear light in, encoded, clamped and rounded to
// nearest (like io/dst_srgba8.wgsl).
typedef unsigned dst_t;

__device__ __forceinline__ unsigned quantize_srgb(float v) {
    return unsigned(floorf(fminf(fmaxf(v, 0.0f), 1.0f) * 255.0f + 0.5f));
}

__device__ __forceinline__ void store_dst(BUF(dst_t) dst, unsigned i, float4 v) {
    dst[i] = quantize_srgb(to_srgb(v.x)) | (quantize_srgb(to_srgb(v.y)) << 8) |
             (quantize_srgb(to_srgb(v.z)) << 16) | (quantize_srgb(v.w) << 24);
}
