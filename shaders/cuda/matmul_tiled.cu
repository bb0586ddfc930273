// CUDA twin of matmul_tiled.wgsl: a block of 16×16 threads computes a 128×128 tile of C, each
// thread an 8×8 block in registers; per step of BK = 8 along K the block stages an A tile
// (transposed) and a B tile in shared memory.

// Params: struct MatmulParams and K_SLICE, from shaders/cuda/params/matmul.cuh.

#define BM 128u
#define BN 128u
#define BK 8u

__device__ __forceinline__ float lane(float4 v, unsigned i) {
    return i == 0u ? v.x : i == 1u ? v.y : i == 2u ? v.z : v.w;
}

extern "C" __global__ void __launch_bounds__(256)
matmul(BUF(float) a, BUF(float) b, BUF(float) c, const MatmulParams d) {
    // As[k][m] and Bs[k][n], as float4 along m and n: BK × 32 float4 each.
    __shared__ float4 As[256];
    __shared__ float4 Bs[256];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned tid = ty * 16u + tx;
    unsigned row_base = blockIdx.y * BM;
    unsigned col_base = blockIdx.x * BN;
    float4 acc[16];
#pragma unroll
    for (unsigned i = 0; i < 16u; i++) acc[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned a_row = tid / 2u;
    unsigned a_k = (tid % 2u) * 4u;
    unsigned b_k = tid / 32u;
    unsigned b_col = (tid % 32u) * 4u;
    float* as = reinterpret_cast<float*>(As);
    unsigned k_end = min(d.k, d.k0 + K_SLICE);
    for (unsigned k0 = d.k0; k0 < k_end; k0 += BK) {
        unsigned gr = row_base + a_row;
#pragma unroll
        for (unsigned j = 0; j < 4u; j++) {
            unsigned gk = k0 + a_k + j;
            float v = 0.0f;
            if (gr < d.m && gk < d.k) v = a[gr * d.k + gk];
            as[((a_k + j) * 32u + a_row / 4u) * 4u + a_row % 4u] = v;
        }
        unsigned gk = k0 + b_k;
        float bv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (gk < d.k) {
            unsigned base = gk * d.n + col_base + b_col;
#pragma unroll
            for (unsigned j = 0; j < 4u; j++) {
                if (col_base + b_col + j < d.n) bv[j] = b[base + j];
            }
        }
        Bs[b_k * 32u + b_col / 4u] = make_float4(bv[0], bv[1], bv[2], bv[3]);
        __syncthreads();
#pragma unroll
        for (unsigned kk = 0; kk < BK; kk++) {
            float4 a0 = As[kk * 32u + ty * 2u];
            float4 a1 = As[kk * 32u + ty * 2u + 1u];
            float4 b0 = Bs[kk * 32u + tx * 2u];
            float4 b1 = Bs[kk * 32u + tx * 2u + 1u];
#pragma unroll
            for (unsigned i = 0; i < 4u; i++) {
                acc[i * 2u] += lane(a0, i) * b0;
                acc[i * 2u + 1u] += lane(a0, i) * b1;
                acc[i * 2u + 8u] += lane(a1, i) * b0;
                acc[i * 2u + 9u] += lane(a1, i) * b1;
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned i = 0; i < 8u; i++) {
        unsigned row = row_base + ty * 8u + i;
        if (row < d.m) {
#pragma unroll
            for (unsigned h = 0; h < 2u; h++) {
                float4 v = acc[i * 2u + h];
                const float e[4] = {v.x, v.y, v.z, v.w};
                unsigned col = col_base + tx * 8u + h * 4u;
#pragma unroll
                for (unsigned j = 0; j < 4u; j++) {
                    if (col + j < d.n) {
                        unsigned at = row * d.n + col + j;
                        c[at] = d.k0 == 0u ? e[j] : c[at] + e[j];
                    }
                }
            }
        }
    }
}
