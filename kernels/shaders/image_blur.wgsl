// One pass of a separable convolution (Gaussian or box: the weights decide), with clamp-to-edge,
// computed in f32 whatever the pixel formats composed in front (see kernels/src/shaders.rs).
// `horizontal`: dst(x, y) = Σ w[i] src(clamp(x + ox + i - R), y + oy); `vertical` likewise along
// y. Bindings: src, dst, weights (2R + 1 values), then the params (shaders/params/image.wgsl).
// Reads clamp to the source image, so a region of a larger image (a tile with its halo) gives the
// same pixels as the whole.
// Premultiplied alpha (io/alpha.wgsl): `horizontal` premultiplies the source into the
// intermediate, `vertical` reads it as it is and writes straight colour.
//
// Each invocation computes K = 8 neighbouring outputs along the pass's axis from one sliding run
// of source pixels, 4 at a time: each source pixel is read and premultiplied once, then weighted
// into the K sums. Source pixels are read raw (`load_src_raw`: 8-bit channels as 0..255 by their
// bit patterns, f16 by shifting its bits into an f32; no conversion instruction, which the GPU
// issues at an eighth of the rate of an FMA) and the unit is folded into the weights.
// The weights sit in workgroup memory with K - 1 zeros in front and zeros after, as vec4s: output
// o takes weight `padded[j - o + K - 1]` of source pixel j, so 4 source pixels need 3 aligned
// vec4 reads and no branch. A zero weight adds an exact 0, so every output is the same sum in the
// same order wherever its invocation and tile fall (tiled == untiled).

@group(0) @binding(2) var<storage, read_write> weights: array<f32>;
@group(0) @binding(3) var<uniform> r: ImageParams;

const K: u32 = 8u;
// The most taps (2 · MAX_RADIUS + 1, kernels/src/image/weights.rs).
const MAX_TAPS: u32 = 2049u;
// K - 1 zeros, MAX_TAPS weights, then zeros up to the last vec4 a group of 4 source pixels reads:
// (ceil((MAX_TAPS + K - 1) / 4) + 2) vec4s.
const PADDED4: u32 = 516u;
var<workgroup> padded: array<vec4<f32>, 516>;

// The weighted sums of the invocation's K outputs.
var<private> a0: vec4<f32>;
var<private> a1: vec4<f32>;
var<private> a2: vec4<f32>;
var<private> a3: vec4<f32>;
var<private> a4: vec4<f32>;
var<private> a5: vec4<f32>;
var<private> a6: vec4<f32>;
var<private> a7: vec4<f32>;

// 2R + 1 weights, never more than the weights binding or the workgroup array holds: no radius
// makes the loop wrap or outlast its binding (a safe dispatch may pass any params).
fn taps() -> u32 {
    return min(min(min(r.radius, 0x7fffffffu) * 2u + 1u, arrayLength(&weights)), MAX_TAPS);
}

// The source pixels an invocation reads for `n` taps: its K outputs' windows, rounded up to
// groups of 4.
fn run_len(n: u32) -> u32 {
    return (n + K + 2u) & ~3u;
}

// Any table the source's raw reads use (prepare_src, io/src_*.wgsl, which fills entry
// `local & 255`), by the `size` invocations of the workgroup, before a barrier.
fn prepare_tables(local: u32, size: u32) {
    for (var l = local; l < 256u; l += size) {
        prepare_src(l);
    }
}

// Element q of the padded weights of `n` taps (K - 1 zeros, the weights over `unit`, zeros).
fn padded_weights(q: u32, n: u32, unit: f32) -> vec4<f32> {
    var w = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c++) {
        let i = q * 4u + c;
        if (i >= K - 1u && i - (K - 1u) < n) {
            w[c] = weights[i - (K - 1u)] * (1.0 / unit);
        }
    }
    return w;
}

// Every invocation of the workgroup (`size` of them) calls this first (uniform control flow for
// the barrier): the weights of `n` taps into `padded`, and the source's tables. `unit` is what
// the pass's raw reads give for 1.0 (folded into the weights).
fn load_weights(local: u32, size: u32, n: u32, unit: f32) {
    prepare_tables(local, size);
    for (var q = local; q < min(run_len(n) / 4u + 2u, PADDED4); q += size) {
        padded[q] = padded_weights(q, n, unit);
    }
    workgroupBarrier();
}

// Source pixel p weighted into every output: `lo` and `hi` are the weights padded[t .. t + 8]
// for its offset t, output o taking element 7 - o.
fn mac(p: vec4<f32>, lo: vec4<f32>, hi: vec4<f32>) {
    a0 += hi.w * p;
    a1 += hi.z * p;
    a2 += hi.y * p;
    a3 += hi.x * p;
    a4 += lo.w * p;
    a5 += lo.z * p;
    a6 += lo.y * p;
    a7 += lo.x * p;
}

// Source pixels j .. j + 4 of the run (j a multiple of 4) weighted into every output.
fn mac4(j: u32, p0: vec4<f32>, p1: vec4<f32>, p2: vec4<f32>, p3: vec4<f32>) {
    mac4w(padded[j / 4u], padded[j / 4u + 1u], padded[j / 4u + 2u], p0, p1, p2, p3);
}

// mac4 with its weights given: the padded weights' vec4s j / 4, j / 4 + 1 and j / 4 + 2.
fn mac4w(
    w0: vec4<f32>,
    w1: vec4<f32>,
    w2: vec4<f32>,
    p0: vec4<f32>,
    p1: vec4<f32>,
    p2: vec4<f32>,
    p3: vec4<f32>,
) {
    mac(p0, w0, w1);
    mac(p1, vec4<f32>(w0.yzw, w1.x), vec4<f32>(w1.yzw, w2.x));
    mac(p2, vec4<f32>(w0.zw, w1.xy), vec4<f32>(w1.zw, w2.xy));
    mac(p3, vec4<f32>(w0.w, w1.xyz), vec4<f32>(w1.w, w2.xyz));
}

fn clear() {
    a0 = vec4<f32>(0.0);
    a1 = a0;
    a2 = a0;
    a3 = a0;
    a4 = a0;
    a5 = a0;
    a6 = a0;
    a7 = a0;
}

// Output o of the invocation's K.
fn sum(o: u32) -> vec4<f32> {
    switch (o) {
        case 0u: { return a0; }
        case 1u: { return a1; }
        case 2u: { return a2; }
        case 3u: { return a3; }
        case 4u: { return a4; }
        case 5u: { return a5; }
        case 6u: { return a6; }
        default: { return a7; }
    }
}

@compute @workgroup_size(16, 16)
fn horizontal(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    load_weights(li, 256u, taps(), SRC_UNIT * SRC_UNIT);
    let x0 = (wg.x * 16u + lid.x) * K;
    let y = wg.y * 16u + lid.y;
    if (x0 >= r.dst_w || y >= r.dst_h) {
        return;
    }
    let row = (y + r.oy) * r.src_stride;
    let first = i32(x0 + r.ox) - i32((taps() - 1u) / 2u);
    let last = i32(r.src_w) - 1;
    clear();
    for (var j = 0u; j < run_len(taps()); j += 4u) {
        let s = first + i32(j);
        mac4(
            j,
            load_premultiplied_raw(row + u32(clamp(s, 0, last))),
            load_premultiplied_raw(row + u32(clamp(s + 1, 0, last))),
            load_premultiplied_raw(row + u32(clamp(s + 2, 0, last))),
            load_premultiplied_raw(row + u32(clamp(s + 3, 0, last))),
        );
    }
    let out = y * r.dst_stride + x0;
    for (var o = 0u; o < K; o++) {
        if (x0 + o < r.dst_w) {
            store_dst(out + o, sum(o));
        }
    }
}

// The horizontal pass with coalesced global reads and writes (`horizontal_staged`, for
// radii up to STAGED_MAX_TAPS / 2; kernels/src/image/blur.rs picks its CUDA twin on the CUDA
// backend, and `horizontal` elsewhere: through NVIDIA's Vulkan driver this one measured slower). `horizontal` reads with a warp's lanes K pixels apart and writes each output on
// its own, so a warp's every load and store instruction touches 32 scattered sectors. Here a
// workgroup of 32 × 4 covers STAGED_SPAN = 256 outputs of 4 rows (a row per 32 invocations):
// 1. its invocations read the rows' source segments (the 256 outputs' windows, as the runs of
//    `horizontal` read them) into `staged`, consecutive invocations reading consecutive pixels,
//    each pixel read and premultiplied once;
// 2. each invocation weights its K outputs from `staged` exactly as `horizontal` does from
//    memory: the same pixels, the same mac4 steps, so every output is the same sum in the same
//    order, bit for bit (tests/blur_staged.rs);
// 3. the sums go back into `staged` and consecutive invocations write consecutive pixels.
// `staged` holds a row's pixels at `row · STAGED_ROW + swizzle(column)`: an invocation's run
// starts K columns after its neighbour's, and the swizzle (within aligned groups of 8) puts any
// 8 neighbouring invocations' pixels on different banks. The padded weights follow the rows
// (`padded`, the other passes' 8 KiB, is not used: workgroups stay small).
// The source is never the half intermediate (no kernel composes src_half with a horizontal pass,
// tests/shaders.rs): its raw unit squared, 2^-224, is 0 in f32.
const STAGED_ROWS: u32 = 4u;
// Invocations per row: a warp on NVIDIA.
const STAGED_LANES: u32 = 32u;
const STAGED_SPAN: u32 = 256u;
// Radius 64 at most (kernels/src/image/blur.rs: BLUR_STAGED_MAX_RADIUS).
const STAGED_MAX_TAPS: u32 = 129u;
// A row's segment, at most: the last invocation's run starts (STAGED_LANES - 1) · K = 248
// pixels in, and is at most run_len(STAGED_MAX_TAPS) = 136 long.
const STAGED_ROW: u32 = 384u;
// Steps of 128 pixels (the workgroup) that cover a row's segment.
const STAGED_STEPS: u32 = 3u;
// Where the padded weights start: run_len(STAGED_MAX_TAPS) / 4 + 2 = 36 vec4s of them.
const STAGED_WEIGHTS: u32 = 1536u;
var<workgroup> staged: array<vec4<f32>, 1572>;

fn swizzle(c: u32) -> u32 {
    return c ^ ((c >> 3u) & 7u);
}

@compute @workgroup_size(32, 4)
fn horizontal_staged(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let n = min(taps(), STAGED_MAX_TAPS);
    let run = run_len(n);
    prepare_tables(li, STAGED_LANES * STAGED_ROWS);
    for (var q = li; q < run / 4u + 2u; q += STAGED_LANES * STAGED_ROWS) {
        staged[STAGED_WEIGHTS + q] = padded_weights(q, n, SRC_UNIT * SRC_UNIT);
    }
    workgroupBarrier();
    // Pixels per row: the last invocation's run ends there.
    let seg = (STAGED_LANES - 1u) * K + run;
    let x_wg = wg.x * STAGED_SPAN;
    let y_wg = wg.y * STAGED_ROWS;
    let first = i32(x_wg + r.ox) - i32((n - 1u) / 2u);
    let last = i32(r.src_w) - 1;
    // 1. The segments, each in STAGED_STEPS steps of 128 pixels: constant trip counts, which
    // the compiler unrolls, so an invocation's reads are in flight together.
    for (var row = 0u; row < STAGED_ROWS; row++) {
        let y = y_wg + row;
        for (var k = 0u; k < STAGED_STEPS; k++) {
            let col = li + k * STAGED_LANES * STAGED_ROWS;
            if (y < r.dst_h && col < seg) {
                let s = u32(clamp(first + i32(col), 0, last));
                staged[row * STAGED_ROW + swizzle(col)] =
                    load_premultiplied_raw((y + r.oy) * r.src_stride + s);
            }
        }
    }
    workgroupBarrier();
    // 2. The invocation's K outputs, as `horizontal` computes them.
    let base = lid.y * STAGED_ROW;
    let c0 = lid.x * K;
    clear();
    if (y_wg + lid.y < r.dst_h && x_wg + c0 < r.dst_w) {
        for (var j = 0u; j < run; j += 4u) {
            // c0 + j is a multiple of 4 (and base of 8): columns c0 + j + t, t < 4, share its
            // group of 8, so theirs are at `at ^ t`.
            let at = base + swizzle(c0 + j);
            let w = STAGED_WEIGHTS + j / 4u;
            mac4w(
                staged[w],
                staged[w + 1u],
                staged[w + 2u],
                staged[at],
                staged[at ^ 1u],
                staged[at ^ 2u],
                staged[at ^ 3u],
            );
        }
    }
    workgroupBarrier();
    for (var o = 0u; o < K; o++) {
        staged[base + swizzle(c0 + o)] = sum(o);
    }
    workgroupBarrier();
    // 3. The outputs, row after row: 4 · 256 of them, 128 a step.
    for (var k = 0u; k < STAGED_SPAN / STAGED_LANES; k++) {
        let q = li + k * STAGED_LANES * STAGED_ROWS;
        let y = y_wg + q / STAGED_SPAN;
        let x = x_wg + q % STAGED_SPAN;
        if (y < r.dst_h && x < r.dst_w) {
            let at = (q / STAGED_SPAN) * STAGED_ROW + swizzle(q % STAGED_SPAN);
            store_dst(y * r.dst_stride + x, staged[at]);
        }
    }
}

@compute @workgroup_size(16, 16)
fn vertical(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    load_weights(li, 256u, taps(), SRC_UNIT);
    let x = wg.x * 16u + lid.x;
    let y0 = (wg.y * 16u + lid.y) * K;
    if (x >= r.dst_w || y0 >= r.dst_h) {
        return;
    }
    let col = x + r.ox;
    let first = i32(y0 + r.oy) - i32((taps() - 1u) / 2u);
    let last = i32(r.src_h) - 1;
    clear();
    for (var j = 0u; j < run_len(taps()); j += 4u) {
        let s = first + i32(j);
        mac4(
            j,
            load_src_raw(u32(clamp(s, 0, last)) * r.src_stride + col),
            load_src_raw(u32(clamp(s + 1, 0, last)) * r.src_stride + col),
            load_src_raw(u32(clamp(s + 2, 0, last)) * r.src_stride + col),
            load_src_raw(u32(clamp(s + 3, 0, last)) * r.src_stride + col),
        );
    }
    for (var o = 0u; o < K; o++) {
        if (y0 + o < r.dst_h) {
            store_straight((y0 + o) * r.dst_stride + x, sum(o));
        }
    }
}

// The vertical pass fused with an exact 2× area downscale (blur, then `resize` by half with
// the area filter, in one kernel: the blurred frame never goes to memory). dst(X, Y) is the
// mean of the blurred pixels at intermediate columns 2X + ox + {0, 1} and rows
// 2Y + oy + {0, 1}. Each invocation blurs 2 columns × 4 rows (the K = 8 layout's last four
// outputs, a0..a3 and a4..a7) and writes 2 rows of one output column. Each blurred pixel goes
// through what the unfused chain does to it (written straight, read premultiplied) and the
// four are summed and divided as the area kernel does (weights 1, total 4), so the pixels are
// those of `blur` then `resize`.

// Source pixels pa (column 2X) and pb (2X + 1) weighted into the 4 rows: `w` holds the
// weights padded[t + 4 .. t + 8] for the pixel's offset t, row o taking element 3 - o.
fn mac2(pa: vec4<f32>, pb: vec4<f32>, w: vec4<f32>) {
    a0 += w.w * pa;
    a1 += w.z * pa;
    a2 += w.y * pa;
    a3 += w.x * pa;
    a4 += w.w * pb;
    a5 += w.z * pb;
    a6 += w.y * pb;
    a7 += w.x * pb;
}

// A blurred pixel as the unfused chain hands it on: written straight (store_straight into an
// RGBA32F stage), read back premultiplied (load_premultiplied).
fn restage(v: vec4<f32>) -> vec4<f32> {
    var rgb = vec3<f32>(0.0);
    if (v.w > 0.0) {
        rgb = v.xyz / v.w;
    }
    return vec4<f32>(rgb * v.w, v.w);
}

// The area filter's sum over one output pixel's 2×2 blurred pixels, in its order (row by row).
fn area4(p00: vec4<f32>, p01: vec4<f32>, p10: vec4<f32>, p11: vec4<f32>) -> vec4<f32> {
    var acc = vec4<f32>(0.0);
    acc += 1.0 * restage(p00);
    acc += 1.0 * restage(p01);
    acc += 1.0 * restage(p10);
    acc += 1.0 * restage(p11);
    return acc / 4.0;
}

@compute @workgroup_size(16, 16)
fn vertical_area2(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    load_weights(li, 256u, taps(), SRC_UNIT);
    let x = wg.x * 16u + lid.x;
    let y0 = (wg.y * 16u + lid.y) * 2u;
    if (x >= r.dst_w || y0 >= r.dst_h) {
        return;
    }
    let col = 2u * x + r.ox;
    let first = i32(2u * y0 + r.oy) - i32((taps() - 1u) / 2u);
    let last = i32(r.src_h) - 1;
    clear();
    // 4 blurred rows need taps + 3 source rows, in groups of 4.
    for (var j = 0u; j < ((taps() + 6u) & ~3u); j += 4u) {
        let s = first + i32(j);
        let w1 = padded[j / 4u + 1u];
        let w2 = padded[j / 4u + 2u];
        let r0 = u32(clamp(s, 0, last)) * r.src_stride + col;
        let r1 = u32(clamp(s + 1, 0, last)) * r.src_stride + col;
        let r2 = u32(clamp(s + 2, 0, last)) * r.src_stride + col;
        let r3 = u32(clamp(s + 3, 0, last)) * r.src_stride + col;
        mac2(load_src_raw(r0), load_src_raw(r0 + 1u), w1);
        mac2(load_src_raw(r1), load_src_raw(r1 + 1u), vec4<f32>(w1.yzw, w2.x));
        mac2(load_src_raw(r2), load_src_raw(r2 + 1u), vec4<f32>(w1.zw, w2.xy));
        mac2(load_src_raw(r3), load_src_raw(r3 + 1u), vec4<f32>(w1.w, w2.xyz));
    }
    store_straight(y0 * r.dst_stride + x, area4(a0, a4, a1, a5));
    if (y0 + 1u < r.dst_h) {
        store_straight((y0 + 1u) * r.dst_stride + x, area4(a2, a6, a3, a7));
    }
}
