// The loader of matmul_f16_coop.wgsl for any K and N: A and B as packed u32 pairs of halves
// (the lower half first), loaded a pair at a time (a word where the pair lies in one row,
// else half by half). Uses AS, BS, ta and tb from the body, which follows.

@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;

// The two halves of a word, the lower first (exact: each is an f16 value in f32).
fn pair(w: u32) -> vec2<f16> {
    return vec2<f16>(unpack2x16float(w));
}

fn half_a(i: u32) -> f16 {
    return pair(a[i >> 1u])[i & 1u];
}

fn half_b(i: u32) -> f16 {
    return pair(b[i >> 1u])[i & 1u];
}

// One step's share of an invocation, in registers: 8 pairs of A, 8 of B.
struct Staged {
    a: array<vec2<f16>, 8>,
    b: array<vec2<f16>, 8>,
}

// Loads this invocation's pairs of A[row0 .. row0 + 128][kt .. kt + BK] and
// B[kt .. kt + BK][col0 .. col0 + 128]; zeros past M, N and k_end.
fn fetch(li: u32, row0: u32, col0: u32, kt: u32, k_end: u32) -> Staged {
    var s: Staged;
    for (var t = 0u; t < 8u; t++) {
        let p = li + 256u * t;
        let gr = row0 + p / 16u;
        let gc = kt + (p % 16u) * 2u;
        var v = vec2<f16>(0.0h);
        if (gr < dims.m) {
            let i = gr * dims.k + gc;
            if ((dims.k & 1u) == 0u) {
                // K even: gc and k_end are even, so the pair is one word of one row.
                if (gc < k_end) {
                    v = pair(a[i >> 1u]);
                }
            } else {
                if (gc < k_end) {
                    v.x = half_a(i);
                }
                if (gc + 1u < k_end) {
                    v.y = half_a(i + 1u);
                }
            }
        }
        s.a[t] = v;
    }
    for (var t = 0u; t < 8u; t++) {
        let p = li + 256u * t;
        let gr = kt + p / 64u;
        let gc = col0 + (p % 64u) * 2u;
        var v = vec2<f16>(0.0h);
        if (gr < k_end) {
            let i = gr * dims.n + gc;
            if ((dims.n & 1u) == 0u) {
                // N even: gc is even, so the pair is one word of one row.
                if (gc < dims.n) {
                    v = pair(b[i >> 1u]);
                }
            } else {
                if (gc < dims.n) {
                    v.x = half_b(i);
                }
                if (gc + 1u < dims.n) {
                    v.y = half_b(i + 1u);
                }
            }
        }
        s.b[t] = v;
    }
    return s;
}

// Stores what `fetch` loaded into ta and tb.
fn put(li: u32, s: Staged) {
    for (var t = 0u; t < 8u; t++) {
        let p = li + 256u * t;
        let at = (p / 16u) * AS + (p % 16u) * 2u;
        ta[at] = s.a[t].x;
        ta[at + 1u] = s.a[t].y;
    }
    for (var t = 0u; t < 8u; t++) {
        let p = li + 256u * t;
        let at = (p / 64u) * BS + (p % 64u) * 2u;
        tb[at] = s.b[t].x;
        tb[at + 1u] = s.b[t].y;
    }
}
