// Destination pixels as RGBA8: clamped to [0, 1] and rounded to nearest, u8(0.5 + 255 v).
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

fn store_dst(i: u32, v: vec4<f32>) {
    let q = vec4<u32>(floor(clamp(v, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0 + 0.5));
    dst[i] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
}

// One channel as store_dst quantizes it.
fn quantize8(c: f32) -> u32 {
    return u32(floor(clamp(c, 0.0, 1.0) * 255.0 + 0.5));
}
