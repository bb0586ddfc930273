// Params of the matmul family (matmul_register.cu, matmul_tiled.cu): the twin of
// shaders/params/matmul.wgsl and `MatmulParams` in kernels/src/matmul.rs.

struct MatmulParams {
    unsigned m;
    unsigned n;
    unsigned k;
    // This launch covers k0 .. min(k0 + K_SLICE, k) and adds to C unless k0 is 0.
    unsigned k0;
};

#define K_SLICE 32768u

