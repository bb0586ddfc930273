// Source pixels as RGBA32F: one vec4<f32> per pixel. Composed in front of an image kernel body
// (see src/shaders.rs), which reads through load_src.
@group(0) @binding(0) var<storage, read_write> src: array<vec4<f32>>;

fn load_src(i: u32) -> vec4<f32> {
    return src[i];
}

// What load_src_raw gives for 1.0: raw reads are load_src's here.
const SRC_UNIT: f32 = 1.0;

fn load_src_raw(i: u32) -> vec4<f32> {
    return load_src(i);
}

// Raw reads need no tables here (see src_srgba8.wgsl's prepare_src).
fn prepare_src(local: u32) {}
