// Premultiplied alpha for filters (blur, resize), as image libraries do: colour under alpha 0
// must not bleed into visible pixels. Composed after the source and destination preludes, in
// front of a filter's body (src/shaders.rs). A filter reads through load_premultiplied, so it
// averages (rgb · a, a), and writes its final result through store_straight, which divides the
// colour by alpha again; a pixel of alpha 0 (or less) comes out as colour 0. Intermediates
// between a filter's passes (the blur's RGBA32F buffer) stay premultiplied.

fn load_premultiplied(i: u32) -> vec4<f32> {
    let v = load_src(i);
    return vec4<f32>(v.xyz * v.w, v.w);
}

// load_premultiplied on raw reads (io/bits.wgsl), in units of SRC_UNIT²: (rgb · a, a · SRC_UNIT).
fn load_premultiplied_raw(i: u32) -> vec4<f32> {
    let v = load_src_raw(i);
    return vec4<f32>(v.xyz * v.w, v.w * SRC_UNIT);
}

fn store_straight(i: u32, v: vec4<f32>) {
    var rgb = vec3<f32>(0.0);
    if (v.w > 0.0) {
        rgb = v.xyz / v.w;
    }
    store_dst(i, vec4<f32>(rgb, v.w));
}
