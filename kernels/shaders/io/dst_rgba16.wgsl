// Destination pixels as RGBA16 (two u32 words: R | G << 16, B | A << 16): clamped to [0, 1] and
// rounded to nearest, u16(0.5 + 65535 v).
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;

fn store_dst(i: u32, v: vec4<f32>) {
    let q = vec4<u32>(floor(clamp(v, vec4<f32>(0.0), vec4<f32>(1.0)) * 65535.0 + 0.5));
    dst[i] = vec2<u32>(q.x | (q.y << 16u), q.z | (q.w << 16u));
}
