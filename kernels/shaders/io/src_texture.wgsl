// Source pixels in an RGBA32F texture, read with textureLoad: the blur's intermediate where
// the adapter reads a texture's columns faster than a buffer's (benches/blur_intermediate.rs).
// Pixel i is texel (i mod stride, i / stride) with `r.src_stride` a power of two, so the
// mapping is a mask and a shift, not a division. Texture kernels are compiled with bounds
// checks: a texel past the texture reads as a clamped one, never outside it. WGSL only: CUDA
// keeps the intermediate in a buffer.
@group(0) @binding(0) var src: texture_2d<f32>;

fn load_src(i: u32) -> vec4<f32> {
    let at = vec2<u32>(i & (r.src_stride - 1u), i >> countTrailingZeros(r.src_stride));
    return textureLoad(src, at, 0);
}

// What load_src_raw gives for 1.0: raw reads are load_src's here.
const SRC_UNIT: f32 = 1.0;

fn load_src_raw(i: u32) -> vec4<f32> {
    return load_src(i);
}

// Raw reads need no tables here (see src_srgba8.wgsl's prepare_src).
fn prepare_src(local: u32) {}
