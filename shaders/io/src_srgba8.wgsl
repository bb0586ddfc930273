// Source pixels as sRGB-encoded RGBA8 (PixelFormat::Srgba8, like wgpu's Rgba8UnormSrgb): read as
// linear light, so a chain's leading `linear` runs inside the kernel that reads the frame.
// Alpha is linear already.
@group(0) @binding(0) var<storage, read_write> src: array<u32>;

fn load_src(i: u32) -> vec4<f32> {
    let v = unpack4x8unorm(src[i]);
    return vec4<f32>(to_linear(v.x), to_linear(v.y), to_linear(v.z), v.w);
}
