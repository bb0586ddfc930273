// The sRGB transfer function (IEC 61966-2-1), for the colour ops (image_color.wgsl) and the
// sRGB-encoded io preludes (src_srgba8.wgsl, dst_srgba8.wgsl). src/shaders.rs composes it into
// every image kernel.

fn to_linear(c: f32) -> f32 {
    if (c <= 0.04045) {
        return c / 12.92;
    }
    return pow((c + 0.055) / 1.055, 2.4);
}

fn to_srgb(c: f32) -> f32 {
    if (c <= 0.0031308) {
        return c * 12.92;
    }
    return 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}
