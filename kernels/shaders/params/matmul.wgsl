// Params of the matmul family (matmul_register.wgsl, matmul_tiled.wgsl), composed in front of
// each by kernels/src/shaders.rs. Mirrors `MatmulParams` in kernels/src/matmul.rs and
// shaders/cuda/params/matmul.cuh; a unit test checks the Rust layout against naga's.

struct MatmulParams {
    // Rows of A and C in this band (A and C are bound a band of rows at a time).
    m: u32,
    n: u32,
    k: u32,
    // This launch covers k0 .. min(k0 + K_SLICE, k) and adds to C unless k0 is 0 (loops of
    // more than 65,535 iterations are cut short by llvmpipe: kernels::matmul slices K).
    k0: u32,
}

const K_SLICE: u32 = 32768u;

