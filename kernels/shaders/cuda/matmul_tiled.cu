// CUDA twin of matmul_tiled.wgsl, the same algorithm: a block of 16×16 threads computes a
// 128×128 tile of C, each thread 8×8 values in registers (rows 4·ty.. and 64+4·ty.., columns
// 4·tx.. and 64+4·tx..); per step of BK along K (8 or 16, the override constant BK as a -D
// define) the block stages a BK×128 slice of A, transposed (and swizzled), and one of B in
// shared memory, double buffered: the next step's values wait in registers while the current
// pair of tiles is multiplied (per k: 4 float4 shared reads, 64 FMAs), then go to the other
// buffer before the step's one barrier. Global memory through mt_load_a, mt_load_b and
// mt_store_c, each guarded by the params (values past M, N or the K slice read as 0 and are
// never stored), from the prelude in front, which defines MT_ELEM: matmul_tiled_scalar.cuh
// (any M, N, K; bindings of float) or matmul_tiled_vec4.cuh (N and K multiples of 4; bindings
// of float4).

// Params: struct MatmulParams and K_SLICE, from shaders/cuda/params/matmul.cuh.

#ifndef BK
#define BK 16
#endif
// The WGSL override UNROLL (TiledConfig::unroll, the k loop written out) arrives as a -D flag
// too and is not used: here the k loop is always `#pragma unroll`.
#if BK != 8 && BK != 16
#error "BK must be 8 or 16"
#endif

#define MT_BM 128u
#define MT_BN 128u
// One buffer of each tile: BK rows of 32 float4 (128 values of M or N).
#define MT_AS_SIZE (BK * 32u)
#define MT_BS_SIZE (BK * 32u)
// Chunks of 4 values of A (and of B) each thread stages per step.
#define MT_CHUNKS (BK / 8)

// The transposed A tile's float4 of rows 4·i .. 4·i+3 at k sits at column i ^ mt_swizzle(k) of
// row k, as in matmul_tiled.wgsl: a warp's transposing stores spread over the 32 banks.
__device__ __forceinline__ unsigned mt_swizzle(unsigned k) {
    return (k / 4u) * (32u / BK);
}

// Chunk q of this thread (4 consecutive k of one row of the A tile), transposed into `as`.
__device__ __forceinline__ void mt_store_as(float* as, unsigned q, float4 v) {
    unsigned row = q / (BK / 4u);
    unsigned kk = (q % (BK / 4u)) * 4u;
    float* p = as + (kk * 32u + ((row / 4u) ^ mt_swizzle(kk))) * 4u + row % 4u;
    p[0] = v.x;
    p[128] = v.y;
    p[256] = v.z;
    p[384] = v.w;
}

extern "C" __global__ void __launch_bounds__(256, 2)
matmul(BUF(MT_ELEM) a, BUF(MT_ELEM) b, BUF(MT_ELEM) c, const MatmulParams d) {
    __shared__ float4 As[2 * MT_AS_SIZE];
    __shared__ float4 Bs[2 * MT_BS_SIZE];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned tid = ty * 16u + tx;
    const unsigned row_base = blockIdx.y * MT_BM;
    const unsigned col_base = blockIdx.x * MT_BN;
    const unsigned k_beg = d.k0;
    const unsigned k_end = min(d.k, d.k0 + K_SLICE);
    const unsigned steps = (k_end - k_beg + BK - 1u) / BK;
    // Chunk j of this thread is q = tid + 256·j: of A (row q / (BK/4), k 4·(q % (BK/4))), of
    // B (k q / 32, column 4·(q % 32)).
    unsigned ar[MT_CHUNKS], ak[MT_CHUNKS], bk[MT_CHUNKS];
#pragma unroll
    for (unsigned j = 0; j < MT_CHUNKS; j++) {
        unsigned q = tid + 256u * j;
        ar[j] = row_base + q / (BK / 4u);
        ak[j] = (q % (BK / 4u)) * 4u;
        bk[j] = q / 32u;
    }
    const unsigned bc = col_base + (tid % 32u) * 4u;
    float4 pa[MT_CHUNKS], pb[MT_CHUNKS];
#pragma unroll
    for (unsigned j = 0; j < MT_CHUNKS; j++) {
        pa[j] = mt_load_a(a, d, ar[j], k_beg + ak[j], k_end);
        pb[j] = mt_load_b(b, d, k_beg + bk[j], bc, k_end);
    }
#pragma unroll
    for (unsigned j = 0; j < MT_CHUNKS; j++) {
        mt_store_as(reinterpret_cast<float*>(As), tid + 256u * j, pa[j]);
        Bs[tid + 256u * j] = pb[j];
    }
    __syncthreads();

    float4 acc[16];
#pragma unroll
    for (unsigned i = 0; i < 16u; i++) acc[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (unsigned s = 0; s < steps; s++) {
        const unsigned cur = s & 1u;
        const bool next = s + 1u < steps;
        if (next) {
            const unsigned k1 = k_beg + (s + 1u) * BK;
#pragma unroll
            for (unsigned j = 0; j < MT_CHUNKS; j++) {
                pa[j] = mt_load_a(a, d, ar[j], k1 + ak[j], k_end);
                pb[j] = mt_load_b(b, d, k1 + bk[j], bc, k_end);
            }
        }
        const float4* as = As + cur * MT_AS_SIZE;
        const float4* bs = Bs + cur * MT_BS_SIZE + tx;
#pragma unroll
        for (unsigned kk = 0; kk < BK; kk++) {
            const unsigned col = ty ^ mt_swizzle(kk);
            const float4 a0 = as[kk * 32u + col];
            const float4 a1 = as[kk * 32u + 16u + col];
            const float4 b0 = bs[kk * 32u];
            const float4 b1 = bs[kk * 32u + 16u];
            const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
            for (unsigned i = 0; i < 8u; i++) {
                acc[2u * i] += av[i] * b0;
                acc[2u * i + 1u] += av[i] * b1;
            }
        }
        if (next) {
            float* other = reinterpret_cast<float*>(As + (1u - cur) * MT_AS_SIZE);
#pragma unroll
            for (unsigned j = 0; j < MT_CHUNKS; j++) {
                mt_store_as(other, tid + 256u * j, pa[j]);
                Bs[(1u - cur) * MT_BS_SIZE + tid + 256u * j] = pb[j];
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (unsigned i = 0; i < 8u; i++) {
        const unsigned row = row_base + (i < 4u ? ty * 4u + i : 64u + ty * 4u + (i - 4u));
        mt_store_c(c, d, row, col_base + tx * 4u, acc[2u * i]);
        mt_store_c(c, d, row, col_base + 64u + tx * 4u, acc[2u * i + 1u]);
    }
}
