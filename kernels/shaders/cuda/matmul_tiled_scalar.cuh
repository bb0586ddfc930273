// The tiled matmul's global memory (in front of matmul_tiled.cu), any M, N, K: bindings of
// float, loads of 4 consecutive values as 4 scalars, each guarded. The twin of
// matmul_tiled_scalar.wgsl.

#define MT_ELEM float

// Four values of A at row r and k = kk .. kk+3, 0 past M or past the K slice's end.
__device__ __forceinline__ float4 mt_load_a(
    BUF(float) a, const MatmulParams& d, unsigned r, unsigned kk, unsigned k_end) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < d.m) {
        unsigned i = r * d.k + kk;
        if (kk + 3u < k_end) {
            v = make_float4(a[i], a[i + 1u], a[i + 2u], a[i + 3u]);
        } else {
            if (kk < k_end) v.x = a[i];
            if (kk + 1u < k_end) v.y = a[i + 1u];
            if (kk + 2u < k_end) v.z = a[i + 2u];
        }
    }
    return v;
}

// Four values of B at row kk and columns col .. col+3, 0 past N or past the K slice.
__device__ __forceinline__ float4 mt_load_b(
    BUF(float) b, const MatmulParams& d, unsigned kk, unsigned col, unsigned k_end) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (kk < k_end) {
        unsigned i = kk * d.n + col;
        if (col + 3u < d.n) {
            v = make_float4(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
        } else {
            if (col < d.n) v.x = b[i];
            if (col + 1u < d.n) v.y = b[i + 1u];
            if (col + 2u < d.n) v.z = b[i + 2u];
        }
    }
    return v;
}

// Four values of C at row and col .. col+3: written by the first K slice, added to by the
// others; nothing past M or N.
__device__ __forceinline__ void mt_store_c(
    BUF(float) c, const MatmulParams& d, unsigned row, unsigned col, float4 v) {
    if (row >= d.m) return;
    unsigned i = row * d.n + col;
    bool add = d.k0 != 0u;
    const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (unsigned j = 0; j < 4u; j++) {
        if (col + j < d.n) c[i + j] = add ? c[i + j] + e[j] : e[j];
    }
}
