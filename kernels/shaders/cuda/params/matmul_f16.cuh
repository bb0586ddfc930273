// Params of the f16 matmul (matmul_f16.cu): the twin of shaders/params/matmul_f16.wgsl and
// `MatmulF16Params` in kernels/src/matmul_f16.rs.

struct MatmulF16Params {
    unsigned m;
    unsigned n;
    unsigned k;
    // This launch covers k0 .. min(k0 + K_SLICE_F16, k) and adds to C unless k0 is 0.
    unsigned k0;
};

#define K_SLICE_F16 32768u

