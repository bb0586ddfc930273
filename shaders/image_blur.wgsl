// One pass of a separable convolution (Gaussian or box: the weights decide), with clamp-to-edge,
// computed in f32 whatever the pixel formats composed in front (see src/shaders.rs).
// `horizontal`: dst(x, y) = Σ w[i] src(clamp(x + ox + i - R), y + oy); `vertical` likewise along
// y. Bindings: src, dst, weights (2R + 1 values), then the params (shaders/params/image.wgsl).
// Reads clamp to the source image, so a region of a larger image (a tile with its halo) gives the
// same pixels as the whole.
// Premultiplied alpha (io/alpha.wgsl): `horizontal` premultiplies the source into the
// intermediate, `vertical` reads it as it is and writes straight colour.
//
// Each invocation computes K neighbouring outputs along the pass's axis from one sliding run of
// 2R + K source pixels: each source pixel is read, converted and premultiplied once, then
// weighted into the K sums. The weights sit in workgroup memory with K - 1 zeros either side,
// so output o takes weight `padded[j - o + K - 1]` of source pixel j with no branch; a zero
// weight adds an exact 0, so every output is the same sum in the same order wherever its
// invocation and tile fall (tiled == untiled).

@group(0) @binding(2) var<storage, read_write> weights: array<f32>;
@group(0) @binding(3) var<uniform> r: ImageParams;

const K: u32 = 4u;
// The most taps (2 · MAX_RADIUS + 1, src/kernels/image/weights.rs) and their padded array.
const MAX_TAPS: u32 = 2049u;
const PADDED: u32 = 2055u;
var<workgroup> padded: array<f32, 2055>;

// 2R + 1 weights, never more than the weights binding or the workgroup array holds: no radius
// makes the loop wrap or outlast its binding (a safe dispatch may pass any params).
fn taps() -> u32 {
    return min(min(min(r.radius, 0x7fffffffu) * 2u + 1u, arrayLength(&weights)), MAX_TAPS);
}

// Every invocation of the workgroup calls this first (uniform control flow for the barrier).
fn load_weights(local: u32) {
    let n = taps();
    for (var i = local; i < n + 2u * (K - 1u); i += 256u) {
        var w = 0.0;
        if (i >= K - 1u && i - (K - 1u) < n) {
            w = weights[i - (K - 1u)];
        }
        padded[min(i, PADDED - 1u)] = w;
    }
    workgroupBarrier();
}

@compute @workgroup_size(16, 16)
fn horizontal(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    load_weights(li);
    let x0 = (wg.x * 16u + lid.x) * K;
    let y = wg.y * 16u + lid.y;
    if (x0 >= r.dst_w || y >= r.dst_h) {
        return;
    }
    let row = (y + r.oy) * r.src_stride;
    let first = i32(x0 + r.ox) - i32((taps() - 1u) / 2u);
    let last = i32(r.src_w) - 1;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    for (var j = 0u; j < taps() + K - 1u; j++) {
        let p = load_premultiplied(row + u32(clamp(first + i32(j), 0, last)));
        a0 += padded[j + 3u] * p;
        a1 += padded[j + 2u] * p;
        a2 += padded[j + 1u] * p;
        a3 += padded[j] * p;
    }
    let out = y * r.dst_stride + x0;
    store_dst(out, a0);
    if (x0 + 1u < r.dst_w) {
        store_dst(out + 1u, a1);
    }
    if (x0 + 2u < r.dst_w) {
        store_dst(out + 2u, a2);
    }
    if (x0 + 3u < r.dst_w) {
        store_dst(out + 3u, a3);
    }
}

@compute @workgroup_size(16, 16)
fn vertical(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    load_weights(li);
    let x = wg.x * 16u + lid.x;
    let y0 = (wg.y * 16u + lid.y) * K;
    if (x >= r.dst_w || y0 >= r.dst_h) {
        return;
    }
    let col = x + r.ox;
    let first = i32(y0 + r.oy) - i32((taps() - 1u) / 2u);
    let last = i32(r.src_h) - 1;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    for (var j = 0u; j < taps() + K - 1u; j++) {
        let p = load_src(u32(clamp(first + i32(j), 0, last)) * r.src_stride + col);
        a0 += padded[j + 3u] * p;
        a1 += padded[j + 2u] * p;
        a2 += padded[j + 1u] * p;
        a3 += padded[j] * p;
    }
    let out = y0 * r.dst_stride + x;
    store_straight(out, a0);
    if (y0 + 1u < r.dst_h) {
        store_straight(out + r.dst_stride, a1);
    }
    if (y0 + 2u < r.dst_h) {
        store_straight(out + 2u * r.dst_stride, a2);
    }
    if (y0 + 3u < r.dst_h) {
        store_straight(out + 3u * r.dst_stride, a3);
    }
}
