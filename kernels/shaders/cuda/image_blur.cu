// CUDA twin of image_blur.wgsl: one pass of a separable convolution with clamp-to-edge;
// `horizontal` premultiplies alpha (io/alpha.cuh), `vertical` writes straight colour. Each thread
// computes K = 8 outputs along the pass's axis from one sliding run of raw source reads, 4 at a
// time, the weights (scaled by the reads' unit) in shared memory as float4s padded with K - 1
// zeros in front and zeros after (see image_blur.wgsl). Each kernel compiles only when it is the
// one asked for (`VRAMKIT_ENTRY_<name>`, defined by the CUDA backend).

#define BLUR_K 8u
#define BLUR_MAX_TAPS 2049u
#define BLUR_PADDED4 516u

// 2R + 1 weights, never more than the weights binding or the shared array holds.
__device__ __forceinline__ unsigned blur_taps(unsigned radius, BUF(float) weights) {
    unsigned long long n = min((unsigned long long)(min(radius, 0x7fffffffu) * 2u + 1u), buf_len(weights));
    return (unsigned)min(n, (unsigned long long)BLUR_MAX_TAPS);
}

// The source pixels a thread reads for `taps` taps: its K outputs' windows, rounded up to
// groups of 4.
__device__ __forceinline__ unsigned blur_run_len(unsigned taps) {
    return (taps + BLUR_K + 2u) & ~3u;
}

// The window's first source index, `pos - R` with R from the clamped taps, kept within ±2^30
// so that adding a run index (< 2^12) never overflows an int whatever the params (a signed
// overflow would be undefined behaviour; clamping changes no index of a real image, whose
// sides are below 2^30).
__device__ __forceinline__ int blur_window_start(long long pos, unsigned taps) {
    long long first = pos - (long long)((taps - 1u) / 2u);
    return (int)min(max(first, -(1ll << 30)), 1ll << 30);
}

// The last source index along the pass (−1 for an empty source: every read clamps to −1, which
// only a checked build, with its clamped bindings, can be launched with).
__device__ __forceinline__ int blur_last(unsigned side) {
    return (int)min((long long)side - 1, (long long)0x7fffffff);
}

// Every thread of the block calls this first: the weights of `taps` taps, and any table the
// source's raw reads use (prepare_src, io/src_*.cuh, which fills entry `local & 255`); `unit` is
// what the pass's raw reads give for 1.
__device__ __forceinline__ void blur_load_weights(float4* padded, unsigned taps, BUF(float) weights, float unit) {
    unsigned local = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned size = blockDim.x * blockDim.y;
    for (unsigned l = local; l < 256u; l += size) prepare_src(l);
    unsigned n4 = min(blur_run_len(taps) / 4u + 2u, BLUR_PADDED4);
    float scale = 1.0f / unit;
    for (unsigned q = local; q < n4; q += size) {
        float w[4];
        for (unsigned c = 0; c < 4u; c++) {
            unsigned i = q * 4u + c;
            w[c] = (i >= BLUR_K - 1u && i - (BLUR_K - 1u) < taps) ? weights[i - (BLUR_K - 1u)] * scale : 0.0f;
        }
        padded[q] = make_float4(w[0], w[1], w[2], w[3]);
    }
    __syncthreads();
}

__device__ __forceinline__ void blur_clear(float4 (&a)[BLUR_K]) {
#pragma unroll
    for (unsigned o = 0; o < BLUR_K; o++) a[o] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// Source pixel p weighted into every output: lo, hi the weights padded[t .. t + 8] for its offset
// t, output o taking element 7 - o.
__device__ __forceinline__ void blur_mac(float4 (&a)[BLUR_K], float4 p, float4 lo, float4 hi) {
    a[0] += hi.w * p;
    a[1] += hi.z * p;
    a[2] += hi.y * p;
    a[3] += hi.x * p;
    a[4] += lo.w * p;
    a[5] += lo.z * p;
    a[6] += lo.y * p;
    a[7] += lo.x * p;
}

// Source pixels j .. j + 4 of the run (j a multiple of 4) weighted into every output.
__device__ __forceinline__ void blur_mac4(float4 (&a)[BLUR_K], const float4* padded, unsigned j,
                                          float4 p0, float4 p1, float4 p2, float4 p3) {
    float4 w0 = padded[j / 4u], w1 = padded[j / 4u + 1u], w2 = padded[j / 4u + 2u];
    blur_mac(a, p0, w0, w1);
    blur_mac(a, p1, make_float4(w0.y, w0.z, w0.w, w1.x), make_float4(w1.y, w1.z, w1.w, w2.x));
    blur_mac(a, p2, make_float4(w0.z, w0.w, w1.x, w1.y), make_float4(w1.z, w1.w, w2.x, w2.y));
    blur_mac(a, p3, make_float4(w0.w, w1.x, w1.y, w1.z), make_float4(w1.w, w2.x, w2.y, w2.z));
}

#ifdef VRAMKIT_ENTRY_horizontal
extern "C" __global__ void horizontal(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    __shared__ float4 padded[BLUR_PADDED4];
    unsigned taps = blur_taps(r.radius, weights);
    blur_load_weights(padded, taps, weights, SRC_UNIT * SRC_UNIT);
    unsigned x0 = gid_x() * BLUR_K, y = gid_y();
    if (x0 >= r.dst_w || y >= r.dst_h) return;
    unsigned row = (y + r.oy) * r.src_stride;
    int first = blur_window_start((long long)x0 + r.ox, taps);
    int last = blur_last(r.src_w);
    float4 a[BLUR_K];
    blur_clear(a);
    for (unsigned j = 0; j < blur_run_len(taps); j += 4u) {
        int s = first + int(j);
        blur_mac4(a, padded, j,
                  load_premultiplied_raw(src, row + unsigned(min(max(s, 0), last))),
                  load_premultiplied_raw(src, row + unsigned(min(max(s + 1, 0), last))),
                  load_premultiplied_raw(src, row + unsigned(min(max(s + 2, 0), last))),
                  load_premultiplied_raw(src, row + unsigned(min(max(s + 3, 0), last))));
    }
    unsigned out = y * r.dst_stride + x0;
#pragma unroll
    for (unsigned o = 0; o < BLUR_K; o++) {
        if (x0 + o < r.dst_w) store_dst(dst, out + o, a[o]);
    }
}
#endif

// The horizontal pass with coalesced global reads and writes (see image_blur.wgsl's
// horizontal_staged): blocks of 32 × 4 threads cover 256 outputs of 4 rows; the rows' source
// segments go through shared memory (read once per pixel, consecutive threads reading
// consecutive pixels), each thread weights its K outputs from there exactly as `horizontal`
// does (the padded weights follow the rows in `staged`), and the sums go back through shared
// memory to be written by consecutive threads. Never composed with the half source (its raw unit squared is 0 in f32).
#define BLUR_STAGED_ROWS 4u
#define BLUR_STAGED_LANES 32u
#define BLUR_STAGED_SPAN 256u
#define BLUR_STAGED_MAX_TAPS 129u
#define BLUR_STAGED_ROW 384u
#define BLUR_STAGED_STEPS 3u
// The padded weights follow the rows: blur_run_len(BLUR_STAGED_MAX_TAPS) / 4 + 2 float4s.
#define BLUR_STAGED_WEIGHTS 1536u
#define BLUR_STAGED_PADDED4 36u

// Column c of a row of `staged`, swizzled within aligned groups of 8 (no bank conflicts between
// neighbouring threads' runs, K pixels apart).
__device__ __forceinline__ unsigned blur_swizzle(unsigned c) {
    return c ^ ((c >> 3) & 7u);
}

#ifdef VRAMKIT_ENTRY_horizontal_staged
extern "C" __global__ void horizontal_staged(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    __shared__ float4 staged[BLUR_STAGED_WEIGHTS + BLUR_STAGED_PADDED4];
    unsigned taps = min(blur_taps(r.radius, weights), BLUR_STAGED_MAX_TAPS);
    // The padded weights of at most BLUR_STAGED_MAX_TAPS taps: BLUR_STAGED_PADDED4 float4s.
    float4* padded = staged + BLUR_STAGED_WEIGHTS;
    blur_load_weights(padded, taps, weights, SRC_UNIT * SRC_UNIT);
    unsigned run = blur_run_len(taps);
    unsigned seg = (BLUR_STAGED_LANES - 1u) * BLUR_K + run;
    unsigned li = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned x_wg = blockIdx.x * BLUR_STAGED_SPAN, y_wg = blockIdx.y * BLUR_STAGED_ROWS;
    int first = blur_window_start((long long)x_wg + r.ox, taps);
    int last = blur_last(r.src_w);
    // 1. The segments, each in BLUR_STAGED_STEPS steps of 128 pixels, unrolled: a thread's
    // reads are in flight together.
#pragma unroll
    for (unsigned row = 0; row < BLUR_STAGED_ROWS; row++) {
        unsigned y = y_wg + row;
#pragma unroll
        for (unsigned k = 0; k < BLUR_STAGED_STEPS; k++) {
            unsigned col = li + k * BLUR_STAGED_LANES * BLUR_STAGED_ROWS;
            if (y < r.dst_h && col < seg) {
                unsigned s = unsigned(min(max(first + int(col), 0), last));
                staged[row * BLUR_STAGED_ROW + blur_swizzle(col)] = load_premultiplied_raw(src, (y + r.oy) * r.src_stride + s);
            }
        }
    }
    __syncthreads();
    // 2. The thread's K outputs, as `horizontal` computes them.
    unsigned base = threadIdx.y * BLUR_STAGED_ROW, c0 = threadIdx.x * BLUR_K;
    float4 a[BLUR_K];
    blur_clear(a);
    if (y_wg + threadIdx.y < r.dst_h && x_wg + c0 < r.dst_w) {
        for (unsigned j = 0; j < run; j += 4u) {
            // Columns c0 + j + t, t < 4, share the group of 8 of c0 + j (a multiple of 4).
            unsigned at = base + blur_swizzle(c0 + j);
            blur_mac4(a, padded, j, staged[at], staged[at ^ 1u], staged[at ^ 2u], staged[at ^ 3u]);
        }
    }
    __syncthreads();
#pragma unroll
    for (unsigned o = 0; o < BLUR_K; o++) staged[base + blur_swizzle(c0 + o)] = a[o];
    __syncthreads();
    // 3. The outputs, row after row: 4 · 256 of them, 128 a step.
#pragma unroll
    for (unsigned k = 0; k < BLUR_STAGED_SPAN / BLUR_STAGED_LANES; k++) {
        unsigned q = li + k * BLUR_STAGED_LANES * BLUR_STAGED_ROWS;
        unsigned y = y_wg + q / BLUR_STAGED_SPAN, x = x_wg + q % BLUR_STAGED_SPAN;
        if (y < r.dst_h && x < r.dst_w) {
            unsigned at = (q / BLUR_STAGED_SPAN) * BLUR_STAGED_ROW + blur_swizzle(q % BLUR_STAGED_SPAN);
            store_dst(dst, y * r.dst_stride + x, staged[at]);
        }
    }
}
#endif

#ifdef VRAMKIT_ENTRY_vertical
extern "C" __global__ void vertical(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    __shared__ float4 padded[BLUR_PADDED4];
    unsigned taps = blur_taps(r.radius, weights);
    blur_load_weights(padded, taps, weights, SRC_UNIT);
    unsigned x = gid_x(), y0 = gid_y() * BLUR_K;
    if (x >= r.dst_w || y0 >= r.dst_h) return;
    unsigned col = x + r.ox;
    int first = blur_window_start((long long)y0 + r.oy, taps);
    int last = blur_last(r.src_h);
    float4 a[BLUR_K];
    blur_clear(a);
    for (unsigned j = 0; j < blur_run_len(taps); j += 4u) {
        int s = first + int(j);
        blur_mac4(a, padded, j,
                  load_src_raw(src, unsigned(min(max(s, 0), last)) * r.src_stride + col),
                  load_src_raw(src, unsigned(min(max(s + 1, 0), last)) * r.src_stride + col),
                  load_src_raw(src, unsigned(min(max(s + 2, 0), last)) * r.src_stride + col),
                  load_src_raw(src, unsigned(min(max(s + 3, 0), last)) * r.src_stride + col));
    }
#pragma unroll
    for (unsigned o = 0; o < BLUR_K; o++) {
        if (y0 + o < r.dst_h) store_straight(dst, (y0 + o) * r.dst_stride + x, a[o]);
    }
}
#endif

// The vertical pass fused with an exact 2× area downscale (see image_blur.wgsl's
// vertical_area2): a[0..4] blur column 2X's 4 rows, a[4..8] column 2X + 1's.
__device__ __forceinline__ void blur_mac2(float4 (&a)[BLUR_K], float4 pa, float4 pb, float4 w) {
    a[0] += w.w * pa;
    a[1] += w.z * pa;
    a[2] += w.y * pa;
    a[3] += w.x * pa;
    a[4] += w.w * pb;
    a[5] += w.z * pb;
    a[6] += w.y * pb;
    a[7] += w.x * pb;
}

// A blurred pixel written straight (as io/alpha.cuh's store_straight: one reciprocal) and read
// back premultiplied, as the unfused chain does.
__device__ __forceinline__ float4 blur_restage(float4 v) {
    float4 s = make_float4(0.0f, 0.0f, 0.0f, v.w);
    if (v.w > 0.0f) {
        float r = 1.0f / v.w;
        s = make_float4(v.x * r, v.y * r, v.z * r, v.w);
    }
    return make_float4(s.x * v.w, s.y * v.w, s.z * v.w, v.w);
}

// The area filter's sum over one output pixel's 2×2 blurred pixels, row by row, weights 1.
__device__ __forceinline__ float4 blur_area4(float4 p00, float4 p01, float4 p10, float4 p11) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    acc += 1.0f * blur_restage(p00);
    acc += 1.0f * blur_restage(p01);
    acc += 1.0f * blur_restage(p10);
    acc += 1.0f * blur_restage(p11);
    return acc / 4.0f;
}

#ifdef VRAMKIT_ENTRY_vertical_area2
extern "C" __global__ void vertical_area2(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    __shared__ float4 padded[BLUR_PADDED4];
    unsigned taps = blur_taps(r.radius, weights);
    blur_load_weights(padded, taps, weights, SRC_UNIT);
    unsigned x = gid_x(), y0 = gid_y() * 2u;
    if (x >= r.dst_w || y0 >= r.dst_h) return;
    unsigned col = 2u * x + r.ox;
    int first = blur_window_start(2ll * y0 + r.oy, taps);
    int last = blur_last(r.src_h);
    float4 a[BLUR_K];
    blur_clear(a);
    for (unsigned j = 0; j < ((taps + 6u) & ~3u); j += 4u) {
        int s = first + int(j);
        float4 w1 = padded[j / 4u + 1u], w2 = padded[j / 4u + 2u];
        unsigned r0 = unsigned(min(max(s, 0), last)) * r.src_stride + col;
        unsigned r1 = unsigned(min(max(s + 1, 0), last)) * r.src_stride + col;
        unsigned r2 = unsigned(min(max(s + 2, 0), last)) * r.src_stride + col;
        unsigned r3 = unsigned(min(max(s + 3, 0), last)) * r.src_stride + col;
        blur_mac2(a, load_src_raw(src, r0), load_src_raw(src, r0 + 1u), w1);
        blur_mac2(a, load_src_raw(src, r1), load_src_raw(src, r1 + 1u), make_float4(w1.y, w1.z, w1.w, w2.x));
        blur_mac2(a, load_src_raw(src, r2), load_src_raw(src, r2 + 1u), make_float4(w1.z, w1.w, w2.x, w2.y));
        blur_mac2(a, load_src_raw(src, r3), load_src_raw(src, r3 + 1u), make_float4(w1.w, w2.x, w2.y, w2.z));
    }
    store_straight(dst, y0 * r.dst_stride + x, blur_area4(a[0], a[4], a[1], a[5]));
    if (y0 + 1u < r.dst_h) store_straight(dst, (y0 + 1u) * r.dst_stride + x, blur_area4(a[2], a[6], a[3], a[7]));
}
#endif
