// Source pixels as sRGB-encoded RGBA8 (PixelFormat::Srgba8, like wgpu's Rgba8UnormSrgb): read as
// linear light, so a chain's leading `linear` runs inside the kernel that reads the frame.
// Alpha is linear already.
@group(0) @binding(0) var<storage, read_write> src: array<u32>;

fn load_src(i: u32) -> vec4<f32> {
    let v = unpack4x8unorm(src[i]);
    return vec4<f32>(to_linear(v.x), to_linear(v.y), to_linear(v.z), v.w);
}

// What load_src_raw gives for 1.0.
const SRC_UNIT: f32 = 1.0;

// load_src's value of every byte, by table: 0..256 the colour channels' (to_linear(b / 255)),
// 256..512 alpha's (b / 255). A kernel that reads through load_src_raw (the blur) fills it with
// prepare_src before its workgroup barrier: one pow per table entry instead of three per read.
var<workgroup> srgb_table: array<f32, 512>;

// Every invocation of a workgroup of 256 calls this, before a workgroupBarrier.
fn prepare_src(local: u32) {
    let b = unpack4x8unorm(local & 255u).x;
    srgb_table[local & 255u] = to_linear(b);
    srgb_table[256u + (local & 255u)] = b;
}

fn load_src_raw(i: u32) -> vec4<f32> {
    let v = src[i];
    return vec4<f32>(
        srgb_table[v & 0xffu],
        srgb_table[(v >> 8u) & 0xffu],
        srgb_table[(v >> 16u) & 0xffu],
        srgb_table[256u + (v >> 24u)],
    );
}
