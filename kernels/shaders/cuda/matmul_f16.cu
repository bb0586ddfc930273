// CUDA twin of matmul_f16.wgsl: C = A·B with A and B in IEEE binary16 (read as packed u32
// pairs, the lower half first) and C in f32, each thread an 8×8 block of C in registers, f32
// products and sums. WG_X and WG_Y (the block size) come from the override constants as -D
// flags. No cuda_fp16.h (NVRTC is given no include paths): PTX converts the halves.

// Params: struct MatmulF16Params and K_SLICE_F16, from shaders/cuda/params/matmul_f16.cuh.

// An f16 bit pattern as f32 (exact).
__device__ __forceinline__ float f16_bits_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// The f16 value at element i of a packed binding.
__device__ __forceinline__ float half_at(BUF(unsigned) x, unsigned i) {
    unsigned w = x[i >> 1];
    return f16_bits_to_float((unsigned short)(w >> ((i & 1u) * 16u)));
}

__device__ __forceinline__ float4 load_b4_f16(BUF(unsigned) b, MatmulF16Params d, unsigned row, unsigned col) {
    unsigned i = row * d.n + col;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (col + 3u < d.n) {
        return make_float4(half_at(b, i), half_at(b, i + 1u), half_at(b, i + 2u), half_at(b, i + 3u));
    }
    if (col < d.n) v.x = half_at(b, i);
    if (col + 1u < d.n) v.y = half_at(b, i + 1u);
    if (col + 2u < d.n) v.z = half_at(b, i + 2u);
    return v;
}

__device__ __forceinline__ void store_c4_f16(BUF(float) c, MatmulF16Params d, unsigned row, unsigned col, float4 v) {
    if (row >= d.m) return;
    unsigned i = row * d.n + col;
    const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (unsigned j = 0; j < 4u; j++) {
        if (col + j < d.n) c[i + j] = d.k0 == 0u ? e[j] : c[i + j] + e[j];
    }
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y)
matmul(BUF(unsigned) a, BUF(unsigned) b, BUF(float) c, const MatmulF16Params d) {
    unsigned col = gid_x() * 8u;
    unsigned row = gid_y() * 8u;
    if (row >= d.m || col >= d.n) return;
    // Rows past M read row M-1 (a valid row) and are never stored.
    unsigned r[8];
#pragma unroll
    for (unsigned i = 0; i < 8u; i++) r[i] = min(row + i, d.m - 1u) * d.k;
    float4 acc[16];
#pragma unroll
    for (unsigned i = 0; i < 16u; i++) acc[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned k_end = min(d.k, d.k0 + K_SLICE_F16);
    for (unsigned k = d.k0; k < k_end; k++) {
        float4 b0 = load_b4_f16(b, d, k, col);
        float4 b1 = load_b4_f16(b, d, k, col + 4u);
#pragma unroll
        for (unsigned i = 0; i < 8u; i++) {
            float av = half_at(a, r[i] + k);
            acc[i * 2u] += av * b0;
            acc[i * 2u + 1u] += av * b1;
        }
    }
#pragma unroll
    for (unsigned i = 0; i < 8u; i++) {
        store_c4_f16(c, d, row + i, col, acc[i * 2u]);
        store_c4_f16(c, d, row + i, col + 4u, acc[i * 2u + 1u]);
    }
}
