// C = A·B with A and B in IEEE binary16 and C in f32, row-major, any M, N, K, on cooperative
// matrices (tensor cores): 16×16×16 f16×f16→f32 `coopMultiplyAdd`, f32 accumulators.
// kernels/src/shaders.rs puts `enable f16; enable wgpu_cooperative_matrix;`, the params and a loader
// first.
//
// A workgroup of 256 invocations — 8 subgroups of 32 (kernels::matmul_typed chooses this
// kernel only where every subgroup is 32 wide) — computes a 128×128 block of C. Along K, in
// steps of BK = 32, it stages a 128×32 tile of A and a 32×128 tile of B in workgroup memory as
// f16, zero-padded past M, N and the K slice (so the tensor cores see whole 16×16 tiles and
// the padding adds zeros), then each subgroup multiplies its 32×64 part of the block: 2×4
// accumulator tiles, from 2 A and 4 B tiles per 16 of K. Each invocation loads its share of
// the next step's tiles into registers (`fetch`) before the multiplications of this one, and
// stores them (`put`) after the barrier that ends them, so global loads overlap the tensor
// cores. Rows of the staged tiles are padded by 8 halves (against bank conflicts), keeping
// every tile's start and stride a multiple of 16 bytes. At the end each accumulator goes
// through a 16×16 f32 scratch tile per subgroup, from which the whole workgroup writes C with
// guards (edges, and adding to C for K slices past the first). Every cooperative operation
// and barrier sits in control flow uniform over the workgroup.
//
// Bindings: A (M×K halves) and B (K×N halves), declared with `Staged`, `fetch` and `put` by a
// loader composed in front (matmul_f16_coop_words.wgsl: u32 pairs, any K and N;
// matmul_f16_coop_vec4.wgsl: 8 halves a load, K and N multiples of 8), then C (M×N f32) and
// dims. Every global access is guarded by dims, which kernels::matmul_typed checks against the
// buffers: the kernel runs without runtime bounds checks.

// Params: struct MatmulF16Params and K_SLICE_F16, from shaders/params/matmul_f16.wgsl.

@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: MatmulF16Params;

const BK: u32 = 32u;
// Row strides of the staged tiles, in halves: BK + 8 and 128 + 8 (80 and 272 bytes).
const AS: u32 = 40u;
const BS: u32 = 136u;

var<workgroup> ta: array<f16, 5120>; // 128 rows × AS
var<workgroup> tb: array<f16, 4352>; // BK rows × BS
var<workgroup> tc: array<f32, 2048>; // a 16×16 f32 tile per subgroup

// Writes accumulator tile `acc` of subgroup `sg` (rows r0.., columns c0.. of C) through the
// scratch tile; called by every invocation, with every subgroup passing its own tile.
fn write_tile(acc: coop_mat16x16<f32, C>, sg: u32, li: u32, r0: u32, c0: u32) {
    coopStoreT(acc, &tc[sg * 256u], 16u);
    workgroupBarrier();
    // Invocation li writes element li of each subgroup's tile; tile s starts at row
    // origin(s), whose parts every invocation recomputes from s as the subgroups did.
    for (var s = 0u; s < 8u; s++) {
        let gr = r0 + (s / 2u) * 32u + li / 16u;
        let gc = c0 + (s % 2u) * 64u + li % 16u;
        if (gr < dims.m && gc < dims.n) {
            let v = tc[s * 256u + li];
            let i = gr * dims.n + gc;
            if (dims.k0 == 0u) {
                c[i] = v;
            } else {
                c[i] += v;
            }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn matmul(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let row0 = wg.y * 128u;
    let col0 = wg.x * 128u;
    // This subgroup's 32×64 part of the block, in the staged tiles.
    let sr = (sg / 2u) * 32u;
    let sc = (sg % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    let k_end = min(dims.k, dims.k0 + K_SLICE_F16);
    var staged = fetch(li, row0, col0, dims.k0, k_end);
    for (var kt = dims.k0; kt < k_end; kt += BK) {
        // The last step's multiplications are done with ta and tb.
        workgroupBarrier();
        put(li, staged);
        workgroupBarrier();
        // The next step's tiles load while this one multiplies (K < 2³⁰: no overflow).
        if (kt + BK < k_end) {
            staged = fetch(li, row0, col0, kt + BK, k_end);
        }
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&ta[sr * AS + kk], AS);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&ta[(sr + 16u) * AS + kk], AS);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BS + sc], BS);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BS + sc + 16u], BS);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BS + sc + 32u], BS);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tb[kk * BS + sc + 48u], BS);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
    }
    write_tile(c00, sg, li, row0, col0);
    write_tile(c01, sg, li, row0, col0 + 16u);
    write_tile(c02, sg, li, row0, col0 + 32u);
    write_tile(c03, sg, li, row0, col0 + 48u);
    write_tile(c10, sg, li, row0 + 16u, col0);
    write_tile(c11, sg, li, row0 + 16u, col0 + 16u);
    write_tile(c12, sg, li, row0 + 16u, col0 + 32u);
    write_tile(c13, sg, li, row0 + 16u, col0 + 48u);
}
