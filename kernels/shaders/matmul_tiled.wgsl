// C = A·B, f32, row-major, any M, N, K: the variant for GPUs. A workgroup of 16×16 invocations
// computes a 128×128 tile of C, each invocation 8×8 values in 16 vec4 registers: rows
// 4·ty .. 4·ty+3 and 64+4·ty .. 64+4·ty+3, columns 4·tx .. 4·tx+3 and 64+4·tx .. 64+4·tx+3, so
// the 16 invocations of a row read 16 consecutive vec4 of the B tile (no bank conflicts) and
// the A values they share are broadcast. Per step of BK along K (override: 8 or 16) the
// workgroup stages a BK×128 slice of A, transposed (and swizzled), and one of B in workgroup
// memory, double buffered: while it multiplies one pair of tiles from workgroup memory (per k:
// 4 vec4 reads, 64 FMAs), each invocation holds the next step's global values in registers,
// and stores them into the other buffer before the one barrier of the step.
//
// The products are explicit fma (one FFMA each, whether or not a driver contracts a multiply
// and an add). The accumulators are only ever indexed by constants (the products and stores
// are written out), so they stay in registers whatever the driver decides to unroll. The
// module has an override constant: wgpu-hal honours `ShaderRuntimeChecks::unchecked()` (no
// forced loop bounds) only for modules with overrides (see kernels/src/matmul.rs).
//
// Global memory through load_a, load_b and store_c, each guarded by dims (values past M, N or
// the K slice read as 0 and are never stored), from the prelude composed in front:
// matmul_tiled_scalar.wgsl (any M, N, K) or matmul_tiled_vec4.wgsl (N and K multiples of 4).

// Params: struct MatmulParams and K_SLICE, from shaders/params/matmul.wgsl.

// K per step: 8 or 16 (kernels::matmul checks). Each invocation stages BK/8 chunks of 4 values
// of A and of B per step.
override BK: u32 = 16u;

// 1: the k loop of a step written out (8 or 16 calls of mac with constant k); 0: a loop over
// BK, left to the driver to unroll (kernels::matmul, TiledConfig::unroll).
override UNROLL: u32 = 0u;

const BM: u32 = 128u;
const BN: u32 = 128u;
// One buffer of each tile, BK rows of 32 vec4 (128 values of M or N): with both double
// buffered, 16 KiB of workgroup memory for BK = 8 (WebGPU's minimum limit), 32 KiB for 16.
override AS_SIZE: u32 = BK * 32u;
override BS_SIZE: u32 = BK * 32u;

var<workgroup> As: array<vec4<f32>, 2u * AS_SIZE>;
var<workgroup> Bs: array<vec4<f32>, 2u * BS_SIZE>;

// The transposed A tile's vec4 of rows 4·i .. 4·i+3 at k sits at column i ^ swizzle(k) of row
// k: the 32 invocations of a warp store 4 consecutive k of 8 (BK = 16) or 16 (BK = 8)
// consecutive rows each, and the swizzle spreads them over the 32 banks (no padding, so the
// tiles fit 32 KiB); readers share a row of A, so the swizzle costs one XOR per k. Below 16,
// so the halves of the tile (columns 0..15 and 16..31) keep to themselves.
fn swizzle(k: u32) -> u32 {
    return (k / 4u) * (32u / BK);
}

// Chunk `q` of this invocation: 4 consecutive k of one row of the A tile, transposed into
// buffer `buf`.
fn store_as(buf: u32, q: u32, v: vec4<f32>) {
    let row = q / (BK / 4u);
    let kk = (q % (BK / 4u)) * 4u;
    let base = buf * AS_SIZE + kk * 32u + ((row / 4u) ^ swizzle(kk));
    let lane = row % 4u;
    As[base][lane] = v.x;
    As[base + 32u][lane] = v.y;
    As[base + 64u][lane] = v.z;
    As[base + 96u][lane] = v.w;
}

// The 8×8 accumulators of an invocation, as 16 named vec4 (indexed by constants only, so they
// stay in registers).
struct Acc {
    c00: vec4<f32>, c01: vec4<f32>, c02: vec4<f32>, c03: vec4<f32>,
    c04: vec4<f32>, c05: vec4<f32>, c06: vec4<f32>, c07: vec4<f32>,
    c08: vec4<f32>, c09: vec4<f32>, c10: vec4<f32>, c11: vec4<f32>,
    c12: vec4<f32>, c13: vec4<f32>, c14: vec4<f32>, c15: vec4<f32>,
}

// One k of a step: 4 vec4 reads of workgroup memory (A tile of buffer `abase`, B tile at
// `bbase` = buffer base + tx), 64 FMAs into `acc`. A value in and out (no pointers), so the
// driver inlines it into plain registers.
fn mac(acc: Acc, abase: u32, bbase: u32, ty: u32, kk: u32) -> Acc {
    let col = ty ^ swizzle(kk);
    let a0 = As[abase + kk * 32u + col];
    let a1 = As[abase + kk * 32u + 16u + col];
    let b0 = Bs[bbase + kk * 32u];
    let b1 = Bs[bbase + kk * 32u + 16u];
    var r: Acc;
    r.c00 = fma(vec4<f32>(a0.x), b0, acc.c00);
    r.c01 = fma(vec4<f32>(a0.x), b1, acc.c01);
    r.c02 = fma(vec4<f32>(a0.y), b0, acc.c02);
    r.c03 = fma(vec4<f32>(a0.y), b1, acc.c03);
    r.c04 = fma(vec4<f32>(a0.z), b0, acc.c04);
    r.c05 = fma(vec4<f32>(a0.z), b1, acc.c05);
    r.c06 = fma(vec4<f32>(a0.w), b0, acc.c06);
    r.c07 = fma(vec4<f32>(a0.w), b1, acc.c07);
    r.c08 = fma(vec4<f32>(a1.x), b0, acc.c08);
    r.c09 = fma(vec4<f32>(a1.x), b1, acc.c09);
    r.c10 = fma(vec4<f32>(a1.y), b0, acc.c10);
    r.c11 = fma(vec4<f32>(a1.y), b1, acc.c11);
    r.c12 = fma(vec4<f32>(a1.z), b0, acc.c12);
    r.c13 = fma(vec4<f32>(a1.z), b1, acc.c13);
    r.c14 = fma(vec4<f32>(a1.w), b0, acc.c14);
    r.c15 = fma(vec4<f32>(a1.w), b1, acc.c15);
    return r;
}

@compute @workgroup_size(16, 16)
fn matmul(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * 16u + tx;
    let row_base = wid.y * BM;
    let col_base = wid.x * BN;
    let k_beg = dims.k0;
    let k_end = min(dims.k, dims.k0 + K_SLICE);
    let steps = (k_end - k_beg + BK - 1u) / BK;
    // The chunks this invocation stages: q0 and, for BK = 16, q1 = q0 + 256. A chunk of A is
    // (row q / (BK/4), k 4·(q % (BK/4))), one of B (k q / 32, column 4·(q % 32)).
    let q0 = tid;
    let q1 = tid + 256u;
    let two = BK == 16u;
    let ar0 = row_base + q0 / (BK / 4u);
    let ak0 = (q0 % (BK / 4u)) * 4u;
    let ar1 = row_base + q1 / (BK / 4u);
    let ak1 = (q1 % (BK / 4u)) * 4u;
    let bk0 = q0 / 32u;
    let bk1 = q1 / 32u;
    let bc = col_base + (q0 % 32u) * 4u;

    var pa0 = load_a(ar0, k_beg + ak0, k_end);
    var pb0 = load_b(k_beg + bk0, bc, k_end);
    var pa1 = vec4<f32>(0.0);
    var pb1 = vec4<f32>(0.0);
    if (two) {
        pa1 = load_a(ar1, k_beg + ak1, k_end);
        pb1 = load_b(k_beg + bk1, bc, k_end);
    }
    store_as(0u, q0, pa0);
    Bs[q0] = pb0;
    if (two) {
        store_as(0u, q1, pa1);
        Bs[q1] = pb1;
    }
    workgroupBarrier();

    var acc = Acc(
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
        vec4<f32>(0.0),
    );
    for (var s = 0u; s < steps; s++) {
        let cur = s % 2u;
        let next = s + 1u < steps;
        if (next) {
            let k1 = k_beg + (s + 1u) * BK;
            pa0 = load_a(ar0, k1 + ak0, k_end);
            pb0 = load_b(k1 + bk0, bc, k_end);
            if (two) {
                pa1 = load_a(ar1, k1 + ak1, k_end);
                pb1 = load_b(k1 + bk1, bc, k_end);
            }
        }
        let abase = cur * AS_SIZE;
        let bbase = cur * BS_SIZE + tx;
        if (UNROLL != 0u) {
            // Written out: every workgroup-memory index is the step's base plus a constant.
            acc = mac(acc, abase, bbase, ty, 0u);
            acc = mac(acc, abase, bbase, ty, 1u);
            acc = mac(acc, abase, bbase, ty, 2u);
            acc = mac(acc, abase, bbase, ty, 3u);
            acc = mac(acc, abase, bbase, ty, 4u);
            acc = mac(acc, abase, bbase, ty, 5u);
            acc = mac(acc, abase, bbase, ty, 6u);
            acc = mac(acc, abase, bbase, ty, 7u);
            if (two) {
                acc = mac(acc, abase, bbase, ty, 8u);
                acc = mac(acc, abase, bbase, ty, 9u);
                acc = mac(acc, abase, bbase, ty, 10u);
                acc = mac(acc, abase, bbase, ty, 11u);
                acc = mac(acc, abase, bbase, ty, 12u);
                acc = mac(acc, abase, bbase, ty, 13u);
                acc = mac(acc, abase, bbase, ty, 14u);
                acc = mac(acc, abase, bbase, ty, 15u);
            }
        } else {
            for (var kk = 0u; kk < BK; kk++) {
                acc = mac(acc, abase, bbase, ty, kk);
            }
        }
        if (next) {
            let other = 1u - cur;
            store_as(other, q0, pa0);
            Bs[other * BS_SIZE + q0] = pb0;
            if (two) {
                store_as(other, q1, pa1);
                Bs[other * BS_SIZE + q1] = pb1;
            }
        }
        workgroupBarrier();
    }

    let r0 = row_base + ty * 4u;
    let r1 = r0 + 64u;
    let col0 = col_base + tx * 4u;
    let col1 = col0 + 64u;
    store_c(r0, col0, acc.c00);
    store_c(r0, col1, acc.c01);
    store_c(r0 + 1u, col0, acc.c02);
    store_c(r0 + 1u, col1, acc.c03);
    store_c(r0 + 2u, col0, acc.c04);
    store_c(r0 + 2u, col1, acc.c05);
    store_c(r0 + 3u, col0, acc.c06);
    store_c(r0 + 3u, col1, acc.c07);
    store_c(r1, col0, acc.c08);
    store_c(r1, col1, acc.c09);
    store_c(r1 + 1u, col0, acc.c10);
    store_c(r1 + 1u, col1, acc.c11);
    store_c(r1 + 2u, col0, acc.c12);
    store_c(r1 + 2u, col1, acc.c13);
    store_c(r1 + 3u, col0, acc.c14);
    store_c(r1 + 3u, col1, acc.c15);
}
