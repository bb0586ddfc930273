// Source pixels as RGBA16: four little-endian u16 per pixel, read as two u32 words (WGSL has no
// 16-bit integers), R | G << 16 and B | A << 16, as [0, 1] floats (v / 65535).
@group(0) @binding(0) var<storage, read_write> src: array<vec2<u32>>;

fn load_src(i: u32) -> vec4<f32> {
    let p = src[i];
    return vec4<f32>(vec4<u32>(p.x & 0xffffu, p.x >> 16u, p.y & 0xffffu, p.y >> 16u)) / 65535.0;
}
