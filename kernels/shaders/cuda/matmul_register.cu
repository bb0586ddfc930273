// CUDA twin of matmul_register.wgsl: C = A·B, each thread an 8×8 block of C in registers, no
// shared memory. WG_X and WG_Y (the block size) come from the override constants as -D flags.

// Params: struct MatmulParams and K_SLICE, from shaders/cuda/params/matmul.cuh.

__device__ __forceinline__ float4 load_b4(BUF(float) b, MatmulParams d, unsigned row, unsigned col) {
    unsigned i = row * d.n + col;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (col + 3u < d.n) {
        return make_float4(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
    }
    if (col < d.n) v.x = b[i];
    if (col + 1u < d.n) v.y = b[i + 1u];
    if (col + 2u < d.n) v.z = b[i + 2u];
    return v;
}

__device__ __forceinline__ void store_c4(BUF(float) c, MatmulParams d, unsigned row, unsigned col, float4 v) {
    if (row >= d.m) return;
    unsigned i = row * d.n + col;
    const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (unsigned j = 0; j < 4u; j++) {
        if (col + j < d.n) c[i + j] = d.k0 == 0u ? e[j] : c[i + j] + e[j];
    }
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y)
matmul(BUF(float) a, BUF(float) b, BUF(float) c, const MatmulParams d) {
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
    unsigned k_end = min(d.k, d.k0 + K_SLICE);
    for (unsigned k = d.k0; k < k_end; k++) {
        float4 b0 = load_b4(b, d, k, col);
        float4 b1 = load_b4(b, d, k, col + 4u);
#pragma unroll
        for (unsigned i = 0; i < 8u; i++) {
            float av = a[r[i] + k];
            acc[i * 2u] += av * b0;
            acc[i * 2u + 1u] += av * b1;
        }
    }
#pragma unroll
    for (unsigned i = 0; i < 8u; i++) {
        store_c4(c, d, row + i, col, acc[i * 2u]);
        store_c4(c, d, row + i, col + 4u, acc[i * 2u + 1u]);
    }
}
