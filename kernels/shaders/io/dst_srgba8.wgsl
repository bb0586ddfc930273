// Destination pixels as sRGB-encoded RGBA8 (see src_srgba8.wgsl): linear light in, encoded,
// clamped to [0, 1] and rounded to nearest, so a chain's trailing `srgb` runs inside the kernel
// that writes the frame.
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

fn store_dst(i: u32, v: vec4<f32>) {
    let e = vec4<f32>(to_srgb(v.x), to_srgb(v.y), to_srgb(v.z), v.w);
    let q = vec4<u32>(floor(clamp(e, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0 + 0.5));
    dst[i] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
}
