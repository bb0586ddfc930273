// The params of every image kernel (shaders/image_*.wgsl), declared once: kernels/src/shaders.rs puts
// this in front of each, and `vramkit_kernels::image::ImageParams` is its Rust mirror (a test
// checks that naga lays both out alike); shaders/cuda/params/image.cuh is the CUDA one. Each
// kernel binds it as a uniform after its storage bindings and reads the fields it needs.
struct ImageParams {
    // The source buffer: width, height and row stride, in pixels.
    src_w: u32,
    src_h: u32,
    src_stride: u32,
    // The destination region and its buffer's row stride.
    dst_w: u32,
    dst_h: u32,
    dst_stride: u32,
    // Where the destination's first pixel reads the source (copy, colour, blur).
    ox: u32,
    oy: u32,
    // Blur: taps either side.
    radius: u32,
    // Resize: full-image coordinates of the source and destination buffers' first pixels,
    // the full source size, and source pixels per destination pixel.
    sx0: u32,
    sy0: u32,
    dx0: u32,
    dy0: u32,
    full_src_w: u32,
    full_src_h: u32,
    scale_x: f32,
    scale_y: f32,
    // Adjust: v' = clamp((v - 0.5) * contrast + 0.5 + brightness, 0, 1) ^ (1 / gamma).
    brightness: f32,
    contrast: f32,
    gamma: f32,
}
