// CUDA twin of image_blur.wgsl: one pass of a separable convolution with clamp-to-edge;
// `horizontal` premultiplies alpha (io/alpha.cuh), `vertical` writes straight colour.

// 2R + 1 weights, never more than the weights binding holds (see image_blur.wgsl).
__device__ __forceinline__ unsigned blur_taps(unsigned radius, BUF(float) weights) {
    return (unsigned)min((unsigned long long)(min(radius, 0x7fffffffu) * 2u + 1u), buf_len(weights));
}

extern "C" __global__ void horizontal(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    unsigned x = gid_x(), y = gid_y();
    if (x >= r.dst_w || y >= r.dst_h) return;
    unsigned row = (y + r.oy) * r.src_stride;
    int sx0 = int(x + r.ox) - int(r.radius);
    int last = int(r.src_w) - 1;
    unsigned taps = blur_taps(r.radius, weights);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (unsigned i = 0; i < taps; i++) {
        int sx = min(max(sx0 + int(i), 0), last);
        acc += weights[i] * load_premultiplied(src, row + unsigned(sx));
    }
    store_dst(dst, y * r.dst_stride + x, acc);
}

extern "C" __global__ void vertical(BUF(src_t) src, BUF(dst_t) dst, BUF(float) weights, const ImageParams r) {
    unsigned x = gid_x(), y = gid_y();
    if (x >= r.dst_w || y >= r.dst_h) return;
    unsigned col = x + r.ox;
    int sy0 = int(y + r.oy) - int(r.radius);
    int last = int(r.src_h) - 1;
    unsigned taps = blur_taps(r.radius, weights);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (unsigned i = 0; i < taps; i++) {
        int sy = min(max(sy0 + int(i), 0), last);
        acc += weights[i] * load_src(src, unsigned(sy) * r.src_stride + col);
    }
    store_straight(dst, y * r.dst_stride + x, acc);
}
