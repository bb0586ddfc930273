// CUDA twin of image_color.wgsl: per-pixel colour operations over a region; alpha is kept. Each
// kernel compiles only when it is the one asked for (`VRAMKIT_ENTRY_<name>`).

// Runs `body` (an expression of v) on the pixel of this thread, if it is inside the region.
#define COLOR_KERNEL(name, body)                                                             \
    extern "C" __global__ void name(BUF(src_t) src, BUF(dst_t) dst, const ImageParams r) {        \
        unsigned x = gid_x(), y = gid_y();                                                   \
        if (x >= r.dst_w || y >= r.dst_h) return;                                            \
        float4 v = load_src(src, (y + r.oy) * r.src_stride + x + r.ox);                      \
        store_dst(dst, y * r.dst_stride + x, body);                                          \
    }

#ifdef VRAMKIT_ENTRY_srgb_to_linear
COLOR_KERNEL(srgb_to_linear, make_float4(to_linear(v.x), to_linear(v.y), to_linear(v.z), v.w))
#endif
#ifdef VRAMKIT_ENTRY_linear_to_srgb
COLOR_KERNEL(linear_to_srgb, make_float4(to_srgb(v.x), to_srgb(v.y), to_srgb(v.z), v.w))
#endif
#ifdef VRAMKIT_ENTRY_luma
COLOR_KERNEL(luma, make_float4(0.2126f * v.x + 0.7152f * v.y + 0.0722f * v.z,
                               0.2126f * v.x + 0.7152f * v.y + 0.0722f * v.z,
                               0.2126f * v.x + 0.7152f * v.y + 0.0722f * v.z, v.w))
#endif
#ifdef VRAMKIT_ENTRY_adjust
COLOR_KERNEL(adjust, make_float4(adjust1(v.x, r), adjust1(v.y, r), adjust1(v.z, r), v.w))
#endif
