// The staging half of a loader of matmul_f16_coop_big.wgsl, for K and N multiples of 8 (its
// global loads: matmul_f16_coop_big_fetch.wgsl).
// Stages halves one by one. Uses BM, BN, BK, AS, BS, TA, TB, WG, ta and tb from the body,
// which follows.

alias ST = f16;
const SW: u32 = 1u;

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
