// Destination pixels as RGBA32F. The kernel body writes through store_dst.
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

fn store_dst(i: u32, v: vec4<f32>) {
    dst[i] = v;
}
