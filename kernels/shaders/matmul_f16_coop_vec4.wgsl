// The loader of matmul_f16_coop.wgsl where K and N are multiples of 8: A and B as vec4<u32>,
// 8 halves (16 bytes) a load, each group of 8 within one row (rows start at multiples of 8
// halves), loaded whole or as zeros (k_end is a multiple of 8 too). Uses AS, BS, ta and tb
// from the body, which follows.

@group(0) @binding(0) var<storage, read_write> a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> b: array<vec4<u32>>;

// Stores the 8 halves of `w` (the lower half of each word first) at t[at .. at + 8].
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

// One step's share of an invocation, in registers: 2 groups of 8 halves of A, 2 of B.
struct Staged {
    a: array<vec4<u32>, 2>,
    b: array<vec4<u32>, 2>,
}

// Loads this invocation's groups of A[row0 .. row0 + 128][kt .. kt + BK] and
// B[kt .. kt + BK][col0 .. col0 + 128]; zeros past M, N and k_end.
fn fetch(li: u32, row0: u32, col0: u32, kt: u32, k_end: u32) -> Staged {
    var s: Staged;
    for (var t = 0u; t < 2u; t++) {
        let p = li + 256u * t;
        let gr = row0 + p / 4u;
        let gc = kt + (p % 4u) * 8u;
        var w = vec4<u32>(0u);
        if (gr < dims.m && gc < k_end) {
            w = a[(gr * dims.k + gc) >> 3u];
        }
        s.a[t] = w;
    }
    for (var t = 0u; t < 2u; t++) {
        let p = li + 256u * t;
        let gr = kt + p / 16u;
        let gc = col0 + (p % 16u) * 8u;
        var w = vec4<u32>(0u);
        if (gr < k_end && gc < dims.n) {
            w = b[(gr * dims.n + gc) >> 3u];
        }
        s.b[t] = w;
    }
    return s;
}

// Stores what `fetch` loaded into ta and tb.
fn put(li: u32, s: Staged) {
    for (var t = 0u; t < 2u; t++) {
        let p = li + 256u * t;
        put_a((p / 4u) * AS + (p % 4u) * 8u, s.a[t]);
        put_b((p / 16u) * BS + (p % 16u) * 8u, s.b[t]);
    }
}
