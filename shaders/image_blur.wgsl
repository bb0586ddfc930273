// One pass of a separable convolution (Gaussian or box: the weights decide), with clamp-to-edge,
// computed in f32 whatever the pixel formats composed in front (see src/shaders.rs).
// `horizontal`: dst(x, y) = Σ w[i] src(clamp(x + ox + i - R), y + oy); `vertical` likewise along
// y. Bindings: src, dst, weights (2R + 1 values), then the params (shaders/params/image.wgsl).
// Reads clamp to the source image, so a region of a larger image (a tile with its halo) gives the
// same pixels as the whole.
// Premultiplied alpha (io/alpha.wgsl): `horizontal` premultiplies the source into the RGBA32F
// intermediate, `vertical` reads it as it is and writes straight colour.

@group(0) @binding(2) var<storage, read_write> weights: array<f32>;
@group(0) @binding(3) var<uniform> r: ImageParams;

// 2R + 1 weights, never more than the weights binding holds: no radius makes the loop wrap or
// outlast its binding (a safe dispatch may pass any params).
fn taps() -> u32 {
    return min(min(r.radius, 0x7fffffffu) * 2u + 1u, arrayLength(&weights));
}

@compute @workgroup_size(16, 16)
fn horizontal(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    let row = (id.y + r.oy) * r.src_stride;
    let x = i32(id.x + r.ox) - i32(r.radius);
    let last = i32(r.src_w) - 1;
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < taps(); i++) {
        let sx = u32(clamp(x + i32(i), 0, last));
        acc += weights[i] * load_premultiplied(row + sx);
    }
    store_dst(id.y * r.dst_stride + id.x, acc);
}

@compute @workgroup_size(16, 16)
fn vertical(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    let col = id.x + r.ox;
    let y = i32(id.y + r.oy) - i32(r.radius);
    let last = i32(r.src_h) - 1;
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < taps(); i++) {
        let sy = u32(clamp(y + i32(i), 0, last));
        acc += weights[i] * load_src(sy * r.src_stride + col);
    }
    store_straight(id.y * r.dst_stride + id.x, acc);
}
