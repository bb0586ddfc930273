// The per-channel colour operations of image_color.wgsl on RGBA8 → RGBA8, by table: an output
// byte depends only on its input byte, so each workgroup first computes the op once for each
// of the 256 values (through the same load, curve and quantization as image_color.wgsl composed
// with io/src_rgba8 and io/dst_rgba8, so the pixels are the same bit for bit), then maps its
// pixels through the table: no pow and no conversion per pixel. Alpha is kept. Composed with
// the RGBA8 preludes only (kernels/src/shaders.rs).
//
// A workgroup of 16×16 invocations covers 16·PX columns × 16 rows; invocation x handles columns
// x, x + 16, … (coalesced reads).

@group(0) @binding(2) var<uniform> r: ImageParams;

const PX: u32 = 4u;
var<workgroup> table: array<u32, 256>;

// The pixels of this invocation through the table (after the workgroup filled it).
fn apply(wg: vec3<u32>, lid: vec3<u32>) {
    let y = wg.y * 16u + lid.y;
    if (y >= r.dst_h) {
        return;
    }
    for (var k = 0u; k < PX; k++) {
        let x = wg.x * 16u * PX + k * 16u + lid.x;
        if (x < r.dst_w) {
            let v = src[(y + r.oy) * r.src_stride + x + r.ox];
            dst[y * r.dst_stride + x] = table[v & 0xffu] | (table[(v >> 8u) & 0xffu] << 8u)
                | (table[(v >> 16u) & 0xffu] << 16u) | (v & 0xff000000u);
        }
    }
}

// Stores the op's value for byte `li`, waits for the whole table, then applies it. Every
// invocation calls this (uniform control flow for the barrier).
fn run(li: u32, value: f32, wg: vec3<u32>, lid: vec3<u32>) {
    table[li] = quantize8(value);
    workgroupBarrier();
    apply(wg, lid);
}

// Byte `b` as load_src reads it.
fn channel(b: u32) -> f32 {
    return unpack4x8unorm(b).x;
}

@compute @workgroup_size(16, 16)
fn srgb_to_linear(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    run(li, to_linear(channel(li)), wg, lid);
}

@compute @workgroup_size(16, 16)
fn linear_to_srgb(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    run(li, to_srgb(channel(li)), wg, lid);
}

@compute @workgroup_size(16, 16)
fn adjust(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let c = clamp((channel(li) - 0.5) * r.contrast + 0.5 + r.brightness, 0.0, 1.0);
    run(li, pow(c, 1.0 / r.gamma), wg, lid);
}
