// The params of every image kernel: the CUDA mirror of shaders/params/image.wgsl and of
// `vramkit_kernels::image::ImageParams` (same fields, same order, 4 bytes each).
struct ImageParams {
    unsigned src_w, src_h, src_stride;
    unsigned dst_w, dst_h, dst_stride;
    unsigned ox, oy;
    unsigned radius;
    unsigned sx0, sy0, dx0, dy0;
    unsigned full_src_w, full_src_h;
    float scale_x, scale_y;
    float brightness, contrast, gamma;
};
