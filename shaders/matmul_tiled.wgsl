// C = A·B, f32, row-major, any M, N, K: the variant for GPUs. A workgroup of 16×16 invocations
// computes a 128×128 tile of C, each invocation an 8×8 block held in registers. Per step of
// BK = 8 along K, the workgroup stages an A tile (transposed) and a B tile in workgroup memory,
// then every invocation does 64 FMAs per 4 vec4 reads.
//
// Bindings as in matmul_register.wgsl. Every global access is guarded by dims.

// Params: struct MatmulParams and K_SLICE, from shaders/params/matmul.wgsl.

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: MatmulParams;

const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 8u;

// As[k][m] and Bs[k][n], as vec4 along m and n: BK × 32 vec4 each.
var<workgroup> As: array<vec4<f32>, 256>;
var<workgroup> Bs: array<vec4<f32>, 256>;

@compute @workgroup_size(16, 16)
fn matmul(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tid = lid.y * 16u + lid.x;
    let row_base = wid.y * BM;
    let col_base = wid.x * BN;
    var acc: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = vec4<f32>(0.0);
    }
    // What this invocation stages: 4 consecutive k of one row of A, 4 consecutive n of one row
    // of B.
    let a_row = tid / 2u;
    let a_k = (tid % 2u) * 4u;
    let b_k = tid / 32u;
    let b_col = (tid % 32u) * 4u;
    let k_end = min(dims.k, dims.k0 + K_SLICE);
    for (var k0 = dims.k0; k0 < k_end; k0 += BK) {
        let gr = row_base + a_row;
        for (var j = 0u; j < 4u; j++) {
            let gk = k0 + a_k + j;
            var v = 0.0;
            if (gr < dims.m && gk < dims.k) {
                v = a[gr * dims.k + gk];
            }
            As[(a_k + j) * 32u + a_row / 4u][a_row % 4u] = v;
        }
        let gk = k0 + b_k;
        var bv = vec4<f32>(0.0);
        if (gk < dims.k) {
            let base = gk * dims.n + col_base + b_col;
            for (var j = 0u; j < 4u; j++) {
                if (col_base + b_col + j < dims.n) {
                    bv[j] = b[base + j];
                }
            }
        }
        Bs[b_k * 32u + b_col / 4u] = bv;
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let a0 = As[kk * 32u + lid.y * 2u];
            let a1 = As[kk * 32u + lid.y * 2u + 1u];
            let b0 = Bs[kk * 32u + lid.x * 2u];
            let b1 = Bs[kk * 32u + lid.x * 2u + 1u];
            for (var i = 0u; i < 4u; i++) {
                acc[i * 2u] += a0[i] * b0;
                acc[i * 2u + 1u] += a0[i] * b1;
                acc[i * 2u + 8u] += a1[i] * b0;
                acc[i * 2u + 9u] += a1[i] * b1;
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 8u; i++) {
        let row = row_base + lid.y * 8u + i;
        if (row < dims.m) {
            for (var h = 0u; h < 2u; h++) {
                let v = acc[i * 2u + h];
                let col = col_base + lid.x * 8u + h * 4u;
                for (var j = 0u; j < 4u; j++) {
                    if (col + j < dims.n) {
                        if (dims.k0 == 0u) {
                            c[row * dims.n + col + j] = v[j];
                        } else {
                            c[row * dims.n + col + j] += v[j];
                        }
                    }
                }
            }
        }
    }
}
