// Per-pixel colour operations, over a region as in image_copy.wgsl, computed in f32 whatever the
// pixel formats composed in front (kernels/src/shaders.rs). Alpha is kept.
// `srgb_to_linear`, `linear_to_srgb`: the sRGB transfer function (io/srgb.wgsl).
// `luma`: Rec. 709 luma (0.2126 R + 0.7152 G + 0.0722 B) into R, G and B.
// `adjust`: v' = clamp((v - 0.5) * contrast + 0.5 + brightness, 0, 1) ^ (1 / gamma).

@group(0) @binding(2) var<uniform> r: ImageParams;

fn load(id: vec3<u32>) -> vec4<f32> {
    return load_src((id.y + r.oy) * r.src_stride + id.x + r.ox);
}

fn inside(id: vec3<u32>) -> bool {
    return id.x < r.dst_w && id.y < r.dst_h;
}

@compute @workgroup_size(16, 16)
fn srgb_to_linear(@builtin(global_invocation_id) id: vec3<u32>) {
    if (!inside(id)) {
        return;
    }
    let v = load(id);
    store_dst(id.y * r.dst_stride + id.x, vec4<f32>(to_linear(v.x), to_linear(v.y), to_linear(v.z), v.w));
}

@compute @workgroup_size(16, 16)
fn linear_to_srgb(@builtin(global_invocation_id) id: vec3<u32>) {
    if (!inside(id)) {
        return;
    }
    let v = load(id);
    store_dst(id.y * r.dst_stride + id.x, vec4<f32>(to_srgb(v.x), to_srgb(v.y), to_srgb(v.z), v.w));
}

@compute @workgroup_size(16, 16)
fn luma(@builtin(global_invocation_id) id: vec3<u32>) {
    if (!inside(id)) {
        return;
    }
    let v = load(id);
    let y = 0.2126 * v.x + 0.7152 * v.y + 0.0722 * v.z;
    store_dst(id.y * r.dst_stride + id.x, vec4<f32>(y, y, y, v.w));
}

@compute @workgroup_size(16, 16)
fn adjust(@builtin(global_invocation_id) id: vec3<u32>) {
    if (!inside(id)) {
        return;
    }
    let v = load(id);
    let c = clamp((v.xyz - 0.5) * r.contrast + 0.5 + r.brightness, vec3<f32>(0.0), vec3<f32>(1.0));
    store_dst(id.y * r.dst_stride + id.x, vec4<f32>(pow(c, vec3<f32>(1.0 / r.gamma)), v.w));
}
