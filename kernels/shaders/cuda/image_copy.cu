// CUDA twin of image_copy.wgsl: dst pixel (x, y) = src pixel (x + ox, y + oy), converting
// between the formats of the io headers composed in front.

extern "C" __global__ void copy(BUF(src_t) src, BUF(dst_t) dst, const ImageParams r) {
    unsigned x = gid_x(), y = gid_y();
    if (x >= r.dst_w || y >= r.dst_h) return;
    store_dst(dst, y * r.dst_stride + x, load_src(src, (y + r.oy) * r.src_stride + x + r.ox));
}
