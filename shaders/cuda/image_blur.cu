// CUDA twin of image_blur.wgsl: one pass of a separable convolution with clamp-to-edge;
// `horizontal` premultiplies alpha (io/alpha.cuh), `vertical` writes straight colour. Each thread
// computes K outputs along the pass's axis from one sliding run of source pixels, the weights in
// shared memory padded with K - 1 zeros either side (see image_blur.wgsl).

#define BLUR_K 4u
#define BLUR_MAX_TAPS 2049u
#define BLUR_PADDED 2055u

// 2R + 1 weights, never more than the weights binding or the shared array holds.
__device__ __forceinline__ unsigned blur_taps(unsigned radius, BUF(float) weights) {
    unsigned long long n = min((unsigned long long)(min(radius, 0x7fffffffu) * 2u + 1u), buf_len(weights));
    return (unsigned)min(n, (unsigned long long)BLUR_MAX_TAPS);
}

// The window's first source index, `pos - R` with R from the clamped taps, kept within ±2^30
// so that adding a tap index (< 2^12) never overflows an int whatever the params (a signed
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

// Every thread of the block calls this first.
__device__ __forceinline__ void blur_load_weights(float* padded, unsigned taps, BUF(float) weights) {
    unsigned local = threadIdx.y * blockDim.x + threadIdx.x;
    for (unsigned i = local; i < taps + 2u * (BLUR_K - 1u); i += blockDim.x * blockDim.y) {
        float w = 0.0f;
        if (i >= BLUR_K - 1u && i - (BLUR_K - 1u) < taps) w = weights[i - (BLUR_K - 1u)];
        padded[min(i, BLUR_PADDED - 1u)] = w;
    }
    __syncthreads();
}

extern "C" __global__ void horizontal(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    __shared__ float padded[BLUR_PADDED];
    unsigned taps = blur_taps(r.radius, weights);
    blur_load_weights(padded, taps, weights);
    unsigned x0 = gid_x() * BLUR_K, y = gid_y();
    if (x0 >= r.dst_w || y >= r.dst_h) return;
    unsigned row = (y + r.oy) * r.src_stride;
    int first = blur_window_start((long long)x0 + r.ox, taps);
    int last = blur_last(r.src_w);
    float4 a0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned j = 0; j < taps + BLUR_K - 1u; j++) {
        float4 p = load_premultiplied(src, row + unsigned(min(max(first + int(j), 0), last)));
        a0 += padded[j + 3u] * p;
        a1 += padded[j + 2u] * p;
        a2 += padded[j + 1u] * p;
        a3 += padded[j] * p;
    }
    unsigned out = y * r.dst_stride + x0;
    store_dst(dst, out, a0);
    if (x0 + 1u < r.dst_w) store_dst(dst, out + 1u, a1);
    if (x0 + 2u < r.dst_w) store_dst(dst, out + 2u, a2);
    if (x0 + 3u < r.dst_w) store_dst(dst, out + 3u, a3);
}

extern "C" __global__ void vertical(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    __shared__ float padded[BLUR_PADDED];
    unsigned taps = blur_taps(r.radius, weights);
    blur_load_weights(padded, taps, weights);
    unsigned x = gid_x(), y0 = gid_y() * BLUR_K;
    if (x >= r.dst_w || y0 >= r.dst_h) return;
    unsigned col = x + r.ox;
    int first = blur_window_start((long long)y0 + r.oy, taps);
    int last = blur_last(r.src_h);
    float4 a0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned j = 0; j < taps + BLUR_K - 1u; j++) {
        float4 p = load_src(src, unsigned(min(max(first + int(j), 0), last)) * r.src_stride + col);
        a0 += padded[j + 3u] * p;
        a1 += padded[j + 2u] * p;
        a2 += padded[j + 1u] * p;
        a3 += padded[j] * p;
    }
    unsigned out = y0 * r.dst_stride + x;
    store_straight(dst, out, a0);
    if (y0 + 1u < r.dst_h) store_straight(dst, out + r.dst_stride, a1);
    if (y0 + 2u < r.dst_h) store_straight(dst, out + 2u * r.dst_stride, a2);
    if (y0 + 3u < r.dst_h) store_straight(dst, out + 3u * r.dst_stride, a3);
}
