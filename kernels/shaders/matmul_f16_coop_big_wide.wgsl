// The staging half of a loader of matmul_f16_coop_big.wgsl, for K and N multiples of 8 (its
// global loads: matmul_f16_coop_big_fetch.wgsl).
// Stages them as vec4<f16>, 2 stores a group. Uses BM, BN, BK, AS, BS, TA, TB, WG, ta and
// tb from the body, which follows.

alias ST = vec4<f16>;
const SW: u32 = 4u;

// The halves of words x and y, the lower half of each word first.
fn quad(x: u32, y: u32) -> vec4<f16> {
    return vec4<f16>(vec2<f16>(unpack2x16float(x)), vec2<f16>(unpack2x16float(y)));
}

// Stores what `fetch` loaded into staging buffer `buf` of ta and tb, each group of 8 halves
// as 2 vec4<f16> (AS and BS are multiples of 8 halves, so rows start at whole elements).
fn put(li: u32, s: Staged, buf: u32) {
    for (var t = 0u; t < NA; t++) {
        let p = li + WG * t;
        let at = buf * TA + (p / GA) * (AS / 4u) + (p % GA) * 2u;
        ta[at] = quad(s.a[t].x, s.a[t].y);
        ta[at + 1u] = quad(s.a[t].z, s.a[t].w);
    }
    for (var t = 0u; t < NB; t++) {
        let p = li + WG * t;
        let at = buf * TB + (p / GB) * (BS / 4u) + (p % GB) * 2u;
        tb[at] = quad(s.b[t].x, s.b[t].y);
        tb[at + 1u] = quad(s.b[t].z, s.b[t].w);
    }
}
