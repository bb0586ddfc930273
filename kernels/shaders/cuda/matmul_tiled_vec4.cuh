// The tiled matmul's global memory (in front of matmul_tiled.cu) when N and K are multiples of
// 4: bindings of float4, one load per chunk of 4 values, one guard per chunk (each is wholly
// inside or wholly past M, N and the K slice). The twin of matmul_tiled_vec4.wgsl.

#define MT_ELEM float4

// A at row r and k = kk .. kk+3 (kk a multiple of 4), 0 past M or the K slice's end.
__device__ __forceinline__ float4 mt_load_a(
    BUF(float4) a, const MatmulParams& d, unsigned r, unsigned kk, unsigned k_end) {
    if (r < d.m && kk < k_end) return a[(r * d.k + kk) / 4u];
    return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// B at row kk and columns col .. col+3 (col a multiple of 4), 0 past N or the K slice.
__device__ __forceinline__ float4 mt_load_b(
    BUF(float4) b, const MatmulParams& d, unsigned kk, unsigned col, unsigned k_end) {
    if (kk < k_end && col < d.n) return b[(kk * d.n + col) / 4u];
    return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// C at row and col .. col+3: written by the first K slice, added to by the others; nothing
// past M or N.
__device__ __forceinline__ void mt_store_c(
    BUF(float4) c, const MatmulParams& d, unsigned row, unsigned col, float4 v) {
    if (row < d.m && col < d.n) {
        unsigned i = (row * d.n + col) / 4u;
        c[i] = d.k0 != 0u ? c[i] + v : v;
    }
}
