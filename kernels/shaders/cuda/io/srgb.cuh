// The sRGB transfer function, like io/srgb.wgsl: composed into every image kernel. As Vulkan
// lets SPIR-V's pow and division be (and NVIDIA's driver makes them), the power is the fast
// exp2(y · log2 x) (__powf: a few ulp here, under 1e-6 of a value in [0, 1]) and the divisions
// by constants are products with their reciprocals: precise powf and IEEE divisions cost tens
// of instructions, paid per tap where a blur reads sRGB-encoded frames. This is the curve of
// every CUDA kernel, the `linear`/`srgb` colour ops included: within 1e-6 of the WGSL one, not
// bit for bit.

__device__ __forceinline__ float to_linear(float c) {
    return c <= 0.04045f ? c * (1.0f / 12.92f) : __powf((c + 0.055f) * (1.0f / 1.055f), 2.4f);
}

__device__ __forceinline__ float to_srgb(float c) {
    return c <= 0.0031308f ? c * 12.92f : 1.055f * __powf(c, 1.0f / 2.4f) - 0.055f;
}

// The `adjust` colour op on one channel (image_color.cu, image_color_rgba8.cu).
__device__ __forceinline__ float adjust1(float v, const ImageParams& r) {
    float c = fminf(fmaxf((v - 0.5f) * r.contrast + 0.5f + r.brightness, 0.0f), 1.0f);
    return powf(c, 1.0f / r.gamma);
}
