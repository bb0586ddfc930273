// Resizing, computed in f32 whatever the pixel formats composed in front (kernels/src/shaders.rs). The full source is full_src_w × full_src_h and the full destination is
// full_src / scale; the source buffer holds the source pixels from (sx0, sy0), the destination
// buffer the destination pixels from (dx0, dy0), so a tile of the output (with its source region
// and halo) gives the same pixels as the whole image. Coordinates clamp to the full source.
// `bilinear`: pixel centres aligned, u = (X + 0.5) · scale − 0.5.
// `area`: the average over the source rectangle [X · scale, (X + 1) · scale), partial pixels
// weighted by their coverage (the right filter for downscaling).
// Both filter premultiplied alpha and write straight colour (io/alpha.wgsl). They read raw
// (load_premultiplied_raw: no conversion instruction per channel, see io/bits.wgsl) and scale the
// result back by 1 / SRC_UNIT² once per output; the source prelude's table, if it has one
// (prepare_src), is filled first.

@group(0) @binding(2) var<uniform> r: ImageParams;

// Full-source coordinates to the buffer; a caller whose buffer misses pixels gets its edge
// pixels, never a read outside the buffer (the kernel runs without runtime bounds checks).
fn at(x: u32, y: u32) -> vec4<f32> {
    let lx = u32(clamp(i32(x) - i32(r.sx0), 0, i32(r.src_w) - 1));
    let ly = u32(clamp(i32(y) - i32(r.sy0), 0, i32(r.src_h) - 1));
    return load_premultiplied_raw(ly * r.src_stride + lx);
}

// What the raw reads' sums are multiplied by to be in units of 1.
const RAW_SCALE: f32 = 1.0 / (SRC_UNIT * SRC_UNIT);

@compute @workgroup_size(16, 16)
fn bilinear(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    prepare_src(li);
    workgroupBarrier();
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    let u = clamp((f32(id.x + r.dx0) + 0.5) * r.scale_x - 0.5, 0.0, f32(r.full_src_w - 1u));
    let v = clamp((f32(id.y + r.dy0) + 0.5) * r.scale_y - 0.5, 0.0, f32(r.full_src_h - 1u));
    let x0 = u32(floor(u));
    let y0 = u32(floor(v));
    let x1 = min(x0 + 1u, r.full_src_w - 1u);
    let y1 = min(y0 + 1u, r.full_src_h - 1u);
    let tx = u - f32(x0);
    let ty = v - f32(y0);
    let top = mix(at(x0, y0), at(x1, y0), tx);
    let bottom = mix(at(x0, y1), at(x1, y1), tx);
    store_straight(id.y * r.dst_stride + id.x, mix(top, bottom, ty) * RAW_SCALE);
}

@compute @workgroup_size(16, 16)
fn area(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    prepare_src(li);
    workgroupBarrier();
    if (id.x >= r.dst_w || id.y >= r.dst_h) {
        return;
    }
    let ax = f32(id.x + r.dx0) * r.scale_x;
    let bx = min(ax + r.scale_x, f32(r.full_src_w));
    let ay = f32(id.y + r.dy0) * r.scale_y;
    let by = min(ay + r.scale_y, f32(r.full_src_h));
    let x_first = u32(floor(ax));
    // Half-open ends: an empty source (full size 0) gives no iterations, never a wrapped range.
    let x_end = min(u32(ceil(bx)), r.full_src_w);
    let y_first = u32(floor(ay));
    let y_end = min(u32(ceil(by)), r.full_src_h);
    var acc = vec4<f32>(0.0);
    var total = 0.0;
    // The pixel edges as floats, stepped by 1 (exact below 2^24): no conversion per pixel.
    var fy = f32(y_first);
    for (var y = y_first; y < y_end; y++) {
        let wy = min(by, fy + 1.0) - max(ay, fy);
        var fx = f32(x_first);
        for (var x = x_first; x < x_end; x++) {
            let w = wy * (min(bx, fx + 1.0) - max(ax, fx));
            acc += w * at(x, y);
            total += w;
            fx += 1.0;
        }
        fy += 1.0;
    }
    store_straight(id.y * r.dst_stride + id.x, acc / total * RAW_SCALE);
}
