// C = A·B on cooperative matrices like matmul_f16_coop.wgsl, with larger tiles per subgroup:
// each subgroup of 32 holds 4×4 accumulators (a 64×64 part of C), so that per 16 of K it
// loads 4 A and 4 B tiles from workgroup memory for 16 multiply-adds (0.5 loads an MMA; the
// 128×128 kernel loads 6 for 8). The subgroups form an SGM × SGN grid (consts composed in
// front by src/shaders/matmul_f16_coop.rs, with the step BK): 2×4 for a 128×256 block of C,
// 4×2 for 256×128 (workgroups of 256), 2×2 for 128×128 (workgroups of 128, two of which can
// share an SM, one's barriers overlapping the other's multiplications). NBUF (a const beside
// them) is 1 or 2 staging buffers: with 2, step i multiplies from buffer i % 2 while the next
// step's tiles go into the other, one barrier a step instead of two.
//
// Tiles are staged in workgroup memory as elements of type ST, SW halves each (the loader
// composed in front picks them: f16, or vec4<f16> for 8-byte stores; naga types a `coopLoad`
// by its pointer's scalar, so words would not do, and SPIR-V counts the stride in elements
// of the pointer's type), rows padded by 8 halves: every tile starts at a multiple of 16
// bytes, and the 8 rows a 16×16 load touches at once fall in distinct banks (every row
// stride is an odd number of 16-byte units). As in the 128×128 kernel the next step's tiles
// load into registers while this one multiplies, the edges are zero-padded (so the tensor
// cores see whole tiles and the padding adds zeros), and C is written through a 16×16 f32
// scratch tile per subgroup with guards (adding to C for K slices past the first). Every
// cooperative operation and barrier sits in control flow uniform over the workgroup.

@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: MatmulF16Params;

// Subgroups and invocations per workgroup.
const NSG: u32 = SGM * SGN;
const WG: u32 = NSG * 32u;
const BM: u32 = SGM * 64u;
const BN: u32 = SGN * 64u;
// Row strides of the staged tiles, in halves (multiples of 8, so of SW too).
const AS: u32 = BK + 8u;
const BS: u32 = BN + 8u;

// Elements of one staging buffer of A and of B.
const TA: u32 = BM * AS / SW;
const TB: u32 = BK * BS / SW;

var<workgroup> ta: array<ST, NBUF * TA>;
var<workgroup> tb: array<ST, NBUF * TB>;
var<workgroup> tc: array<f32, NSG * 256u>; // a 16×16 f32 tile per subgroup

// Writes accumulator tile (ti, tj) of every subgroup through the scratch tile; called by
// every invocation, with every subgroup passing its own tile.
fn write_tile(
    acc: coop_mat16x16<f32, C>,
    sg: u32,
    li: u32,
    row0: u32,
    col0: u32,
    ti: u32,
    tj: u32,
) {
    coopStoreT(acc, &tc[sg * 256u], 16u);
    workgroupBarrier();
    // Invocation li writes elements li, li + WG, … of each subgroup's tile.
    for (var e = 0u; e < NSG * 256u; e += WG) {
        let s = (e + li) / 256u;
        let x = (e + li) % 256u;
        let gr = row0 + (s / SGN) * 64u + ti * 16u + x / 16u;
        let gc = col0 + (s % SGN) * 64u + tj * 16u + x % 16u;
        if (gr < dims.m && gc < dims.n) {
            let v = tc[e + li];
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

// This subgroup's A tile i (rows sr + 16i ..) at K offset kk of staging buffer `buf`.
fn load_a(buf: u32, sr: u32, i: u32, kk: u32) -> coop_mat16x16<f16, A> {
    let at = buf * TA + ((sr + i * 16u) * AS + kk) / SW;
    return coopLoadT<coop_mat16x16<f16, A>>(&ta[at], AS / SW);
}

fn load_b(buf: u32, sc: u32, j: u32, kk: u32) -> coop_mat16x16<f16, B> {
    let at = buf * TB + (kk * BS + sc + j * 16u) / SW;
    return coopLoadT<coop_mat16x16<f16, B>>(&tb[at], BS / SW);
}

@compute @workgroup_size(WG)
fn matmul(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_id) sg: u32,
) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    // This subgroup's 64×64 part of the block, in the staged tiles.
    let sr = (sg / SGN) * 64u;
    let sc = (sg % SGN) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();
    let k_end = min(dims.k, dims.k0 + K_SLICE_F16);
    var staged = fetch(li, row0, col0, dims.k0, k_end);
    put(li, staged, 0u);
    workgroupBarrier();
    var cur = 0u;
    for (var kt = dims.k0; kt < k_end; kt += BK) {
        // The next step's tiles load while this one multiplies (K < 2³⁰: no overflow).
        let more = kt + BK < k_end;
        if (more) {
            staged = fetch(li, row0, col0, kt + BK, k_end);
        }
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = load_a(cur, sr, 0u, kk);
            let a1 = load_a(cur, sr, 1u, kk);
            let a2 = load_a(cur, sr, 2u, kk);
            let a3 = load_a(cur, sr, 3u, kk);
            let b0 = load_b(cur, sc, 0u, kk);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c20 = coopMultiplyAdd(a2, b0, c20);
            c30 = coopMultiplyAdd(a3, b0, c30);
            let b1 = load_b(cur, sc, 1u, kk);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c21 = coopMultiplyAdd(a2, b1, c21);
            c31 = coopMultiplyAdd(a3, b1, c31);
            let b2 = load_b(cur, sc, 2u, kk);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c22 = coopMultiplyAdd(a2, b2, c22);
            c32 = coopMultiplyAdd(a3, b2, c32);
            let b3 = load_b(cur, sc, 3u, kk);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c13 = coopMultiplyAdd(a1, b3, c13);
            c23 = coopMultiplyAdd(a2, b3, c23);
            c33 = coopMultiplyAdd(a3, b3, c33);
        }
        // One buffer: every subgroup is done with it before it is overwritten. Two: the
        // other one was last read a step ago, before the barrier that ended that step.
        if (NBUF == 1u) {
            workgroupBarrier();
        }
        let next = (cur + 1u) % NBUF;
        if (more) {
            put(li, staged, next);
        }
        // The next step's tiles are in place before any subgroup reads them.
        workgroupBarrier();
        cur = next;
    }
    write_tile(c00, sg, li, row0, col0, 0u, 0u);
    write_tile(c01, sg, li, row0, col0, 0u, 1u);
    write_tile(c02, sg, li, row0, col0, 0u, 2u);
    write_tile(c03, sg, li, row0, col0, 0u, 3u);
    write_tile(c10, sg, li, row0, col0, 1u, 0u);
    write_tile(c11, sg, li, row0, col0, 1u, 1u);
    write_tile(c12, sg, li, row0, col0, 1u, 2u);
    write_tile(c13, sg, li, row0, col0, 1u, 3u);
    write_tile(c20, sg, li, row0, col0, 2u, 0u);
    write_tile(c21, sg, li, row0, col0, 2u, 1u);
    write_tile(c22, sg, li, row0, col0, 2u, 2u);
    write_tile(c23, sg, li, row0, col0, 2u, 3u);
    write_tile(c30, sg, li, row0, col0, 3u, 0u);
    write_tile(c31, sg, li, row0, col0, 3u, 1u);
    write_tile(c32, sg, li, row0, col0, 3u, 2u);
    write_tile(c33, sg, li, row0, col0, 3u, 3u);
}
