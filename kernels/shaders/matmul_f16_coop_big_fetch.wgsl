// The global loads of matmul_f16_coop_big.wgsl's loaders (matmul_f16_coop_big_vec4.wgsl,
// matmul_f16_coop_big_wide.wgsl), for K and N multiples of 8: A and B as vec4<u32>, 8 halves
// (16 bytes) a load, each group of 8 within one row (rows start at multiples of 8 halves), loaded
// whole or as zeros (k_end is a multiple of 8 too). Uses BM, BN, BK and WG from the body.

@group(0) @binding(0) var<storage, read_write> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> b: array<vec4<u32>>;

// Groups of 8 halves per invocation and step (the tiles' sizes are multiples of 8·WG halves).
const NA: u32 = BM * BK / (8u * WG);
const NB: u32 = BK * BN / (8u * WG);
// Groups per row of the A and B tiles.
const GA: u32 = BK / 8u;
const GB: u32 = BN / 8u;

// One step's share of an invocation, in registers.
struct Staged {
    a: array<vec4<u32>, NA>,
    b: array<vec4<u32>, NB>,
}

// Loads this invocation's groups of A[row0 .. row0 + BM][kt .. kt + BK] and
// B[kt .. kt + BK][col0 .. col0 + BN]; zeros past M, N and k_end.
fn fetch(li: u32, row0: u32, col0: u32, kt: u32, k_end: u32) -> Staged {
    var s: Staged;
    for (var t = 0u; t < NA; t++) {
        let p = li + WG * t;
        let gr = row0 + p / GA;
        let gc = kt + (p % GA) * 8u;
        var w = vec4<u32>(0u);
        if (gr < dims.m && gc < k_end) {
            w = a[(gr * dims.k + gc) >> 3u];
        }
        s.a[t] = w;
    }
    for (var t = 0u; t < NB; t++) {
        let p = li + WG * t;
        let gr = kt + p / GB;
        let gc = col0 + (p % GB) * 8u;
        var w = vec4<u32>(0u);
        if (gr < k_end && gc < dims.n) {
            w = b[(gr * dims.n + gc) >> 3u];
        }
        s.b[t] = w;
    }
    return s;
}
