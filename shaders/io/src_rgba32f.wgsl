// Source pixels as RGBA32F: one vec4<f32> per pixel. Composed in front of an image kernel body
// (see src/shaders.rs), which reads through load_src.
@group(0) @binding(0) var<storage, read_write> src: array<vec4<f32>>;

fn load_src(i: u32) -> vec4<f32> {
    return src[i];
}
