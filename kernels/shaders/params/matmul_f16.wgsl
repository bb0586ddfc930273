// Params of the f16 matmul (matmul_f16.wgsl, matmul_f16_coop.wgsl), composed in front of each
// by kernels/src/shaders.rs. Mirrors `MatmulF16Params` in kernels/src/matmul_f16.rs and
// shaders/cuda/params/matmul_f16.cuh; a unit test checks the Rust layout against naga's.

struct MatmulF16Params {
    // Rows of A and C in this band (A and C are bound a band of rows at a time).
    m: u32,
    n: u32,
    k: u32,
    // This launch covers k0 .. min(k0 + K_SLICE_F16, k) and adds to C unless k0 is 0 (loops
    // of more than 65,535 iterations are cut short by llvmpipe: the launcher slices K).
    k0: u32,
}

const K_SLICE_F16: u32 = 32768u;

