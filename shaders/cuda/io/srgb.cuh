// The sRGB transfer function, like io/srgb.wgsl: composed into every image kernel. The divisions
// by constants are products with their reciprocals (within an ulp of the quotient, as Vulkan
// allows a division to be), since an IEEE division costs a dozen instructions.

__device__ __forceinline__ float to_linear(float c) {
    return c <= 0.04045f ? c * (1.0f / 12.92f) : powf((c + 0.055f) * (1.0f / 1.055f), 2.4f);
}

__device__ __forceinline__ float to_srgb(float c) {
    return c <= 0.0031308f ? c * 12.92f : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
}
