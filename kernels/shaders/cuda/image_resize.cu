// CUDA twin of image_resize.wgsl: bilinear (pixel centres aligned) and area-average resizing of
// a region of the full image, coordinates clamped to the full source; premultiplied alpha in,
// straight colour out (io/alpha.cuh); raw reads scaled back once per output (see
// image_resize.wgsl). Each kernel compiles only when it is the one asked for
// (`VRAMKIT_ENTRY_<name>`, defined by the CUDA backend).

// Full-source coordinates to the buffer, clamped to the pixels it holds.
__device__ __forceinline__ float4 at(BUF(src_t) src, const ImageParams& r, unsigned x, unsigned y) {
    int lx = min(max(int(x) - int(r.sx0), 0), int(r.src_w) - 1);
    int ly = min(max(int(y) - int(r.sy0), 0), int(r.src_h) - 1);
    return load_premultiplied_raw(src, unsigned(ly) * r.src_stride + unsigned(lx));
}

// What the raw reads' sums are multiplied by to be in units of 1.
constexpr float RAW_SCALE = 1.0f / (SRC_UNIT * SRC_UNIT);

// Every thread of the block calls this first: the source prelude's table, if any.
__device__ __forceinline__ void resize_prepare() {
    prepare_src(threadIdx.y * blockDim.x + threadIdx.x);
    __syncthreads();
}

#ifdef VRAMKIT_ENTRY_bilinear
extern "C" __global__ void bilinear(BUF(src_t) src, BUF(dst_t) dst, const ImageParams r) {
    resize_prepare();
    unsigned x = gid_x(), y = gid_y();
    if (x >= r.dst_w || y >= r.dst_h) return;
    float u = fminf(fmaxf((float(x + r.dx0) + 0.5f) * r.scale_x - 0.5f, 0.0f), float(r.full_src_w - 1u));
    float v = fminf(fmaxf((float(y + r.dy0) + 0.5f) * r.scale_y - 0.5f, 0.0f), float(r.full_src_h - 1u));
    unsigned x0 = unsigned(floorf(u)), y0 = unsigned(floorf(v));
    unsigned x1 = min(x0 + 1u, r.full_src_w - 1u), y1 = min(y0 + 1u, r.full_src_h - 1u);
    float tx = u - float(x0), ty = v - float(y0);
    float4 top = mix4(at(src, r, x0, y0), at(src, r, x1, y0), tx);
    float4 bottom = mix4(at(src, r, x0, y1), at(src, r, x1, y1), tx);
    store_straight(dst, y * r.dst_stride + x, RAW_SCALE * mix4(top, bottom, ty));
}
#endif

#ifdef VRAMKIT_ENTRY_area
extern "C" __global__ void area(BUF(src_t) src, BUF(dst_t) dst, const ImageParams r) {
    resize_prepare();
    unsigned x = gid_x(), y = gid_y();
    if (x >= r.dst_w || y >= r.dst_h) return;
    float ax = float(x + r.dx0) * r.scale_x;
    float bx = fminf(ax + r.scale_x, float(r.full_src_w));
    float ay = float(y + r.dy0) * r.scale_y;
    float by = fminf(ay + r.scale_y, float(r.full_src_h));
    unsigned x_first = unsigned(floorf(ax));
    // Half-open ends: an empty source (full size 0) gives no iterations, never a wrapped range.
    unsigned x_end = min(unsigned(ceilf(bx)), r.full_src_w);
    unsigned y_first = unsigned(floorf(ay));
    unsigned y_end = min(unsigned(ceilf(by)), r.full_src_h);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float total = 0.0f;
    // The pixel edges as floats, stepped by 1 (exact below 2^24): no conversion per pixel.
    float fy = float(y_first);
    for (unsigned sy = y_first; sy < y_end; sy++, fy += 1.0f) {
        float wy = fminf(by, fy + 1.0f) - fmaxf(ay, fy);
        float fx = float(x_first);
        for (unsigned sx = x_first; sx < x_end; sx++, fx += 1.0f) {
            float w = wy * (fminf(bx, fx + 1.0f) - fmaxf(ax, fx));
            acc += w * at(src, r, sx, sy);
            total += w;
        }
    }
    store_straight(dst, y * r.dst_stride + x, RAW_SCALE * (acc / total));
}
#endif
