// The loader of matmul_f16_coop_big.wgsl, for K and N multiples of 8: A and B as vec4<u32>,
// 8 halves (16 bytes) a load, each group of 8 within one row (rows start at multiples of 8
// halves), loaded whole or as zeros (k_end is a multiple of 8 too).
// Stages halves one by one. Uses BM, BN, BK, AS, BS, TA, TB, WG, ta and tb from the body,
// which follows.

alias ST = f16;
const SW: u32 = 1u;

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

// Stores the 8 halves of `w` (the lower half of each word first) at ta[at .. at + 8].
fn put_a(at: u32, w: vec4<u32>) {
    let x = vec2<f16>(unpack2x16float(w.x));
    let y = vec2<f16>(unpack2x16float(w.y));
    let z = vec2<f16>(unpack2x16float(w.z));
    let v = vec2<f16>(unpack2x16float(w.w));
    ta[at] = x.x;
    ta[at + 1u] = x.y;
    ta[at + 2u] = y.x;
    ta[at + 3u] = y.y;
    ta[at + 4u] = z.x;
    ta[at + 5u] = z.y;
    ta[at + 6u] = v.x;
    ta[at + 7u] = v.y;
}

fn put_b(at: u32, w: vec4<u32>) {
    let x = vec2<f16>(unpack2x16float(w.x));
    let y = vec2<f16>(unpack2x16float(w.y));
    let z = vec2<f16>(unpack2x16float(w.z));
    let v = vec2<f16>(unpack2x16float(w.w));
    tb[at] = x.x;
    tb[at + 1u] = x.y;
    tb[at + 2u] = y.x;
    tb[at + 3u] = y.y;
    tb[at + 4u] = z.x;
    tb[at + 5u] = z.y;
    tb[at + 6u] = v.x;
    tb[at + 7u] = v.y;
}

// Stores what `fetch` loaded into staging buffer `buf` of ta and tb, each group of 8 halves
// at a multiple of 16 bytes (so the driver may merge its 8 stores into one).
fn put(li: u32, s: Staged, buf: u32) {
    for (var t = 0u; t < NA; t++) {
        let p = li + WG * t;
        put_a(buf * TA + (p / GA) * AS + (p % GA) * 8u, s.a[t]);
    }
    for (var t = 0u; t < NB; t++) {
        let p = li + WG * t;
        put_b(buf * TB + (p / GB) * BS + (p % GB) * 8u, s.b[t]);
    }
}
