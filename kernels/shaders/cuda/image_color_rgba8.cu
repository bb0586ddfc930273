// CUDA twin of image_color_rgba8.wgsl: the per-channel colour operations on RGBA8 → RGBA8 by a
// table of the 256 byte values, filled by each block, then applied to PX pixels per thread.
// Each kernel compiles only when it is the one asked for (`VRAMKIT_ENTRY_<name>`).

#define COLOR_PX 4u

__device__ __forceinline__ void color_apply(BUF(src_t) src, BUF(dst_t) dst, const ImageParams& r,
                                            const unsigned* table) {
    unsigned y = blockIdx.y * 16u + threadIdx.y;
    if (y >= r.dst_h) return;
#pragma unroll
    for (unsigned k = 0; k < COLOR_PX; k++) {
        unsigned x = blockIdx.x * 16u * COLOR_PX + k * 16u + threadIdx.x;
        if (x < r.dst_w) {
            unsigned v = src[(y + r.oy) * r.src_stride + x + r.ox];
            dst[y * r.dst_stride + x] = table[v & 255u] | (table[(v >> 8) & 255u] << 8) |
                                        (table[(v >> 16) & 255u] << 16) | (v & 0xff000000u);
        }
    }
}

// Fills the block's table with `value` (an expression of the channel value c), then applies it.
#define COLOR_TABLE_KERNEL(name, value)                                                      \
    extern "C" __global__ void name(BUF(src_t) src, BUF(dst_t) dst, const ImageParams r) {    \
        __shared__ unsigned table[256];                                                      \
        unsigned li = threadIdx.y * 16u + threadIdx.x;                                       \
        float c = unorm8(li);                                                                \
        table[li] = quantize(value);                                                         \
        __syncthreads();                                                                     \
        color_apply(src, dst, r, table);                                                     \
    }

#ifdef VRAMKIT_ENTRY_srgb_to_linear
COLOR_TABLE_KERNEL(srgb_to_linear, to_linear(c))
#endif
#ifdef VRAMKIT_ENTRY_linear_to_srgb
COLOR_TABLE_KERNEL(linear_to_srgb, to_srgb(c))
#endif
#ifdef VRAMKIT_ENTRY_adjust
COLOR_TABLE_KERNEL(adjust, adjust1(c, r))
#endif
