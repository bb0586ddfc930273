//! The staged horizontal blur pass (`horizontal_staged` in shaders/image_blur.wgsl: the rows'
//! source segments and the outputs go through workgroup memory) computes every pixel of the
//! unstaged pass (`horizontal`), bit for bit: for each format pair it has, radii up to
//! `BLUR_STAGED_MAX_RADIUS`, widths that are not multiples of either pass's workgroup span,
//! regions at an origin inside a larger source and padded strides, with random weights and all
//! of the intermediate (its stride's padding too) compared; the unstaged pass is checked against
//! a CPU twin on the way. And `blur_area2`, whose intermediate is a buffer on every adapter,
//! equals its two passes launched unstaged, on both sides of the staged radius limit (on the
//! CUDA backend it runs the staged pass up to the limit; wgpu always runs the unstaged one,
//! and there only the first test runs the staged pass).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::{Backend, KernelSource};
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc};
use vramkit_kernels::image::{
    blur_area2, blur_weights, Blur, ImageParams, ImageView, PixelFormat, BLUR_STAGED_MAX_RADIUS,
    BLUR_STAGED_WORKGROUP_BYTES,
};
use vramkit_kernels::image_cpu::srgb_to_linear_cpu;
use vramkit_kernels::shaders;

gpu_tests!(
    the_staged_pass_equals_the_unstaged_one_bit_for_bit,
    blur_area2_equals_its_unstaged_passes_on_both_sides_of_the_limit,
);

/// A horizontal pass's source format and intermediate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Src {
    Rgba8,
    Srgba8,
    Rgba32F,
}

/// One format pair: the unstaged pass, the staged one, the source, and whether the
/// intermediate is four f16 (else RGBA32F).
struct Variant {
    unstaged: KernelSource,
    staged: KernelSource,
    src: Src,
    half: bool,
}

fn variants() -> [Variant; 4] {
    [
        Variant {
            unstaged: shaders::BLUR_HORIZONTAL_RGBA8,
            staged: shaders::BLUR_HORIZONTAL_RGBA8_STAGED,
            src: Src::Rgba8,
            half: true,
        },
        Variant {
            unstaged: shaders::BLUR_HORIZONTAL,
            staged: shaders::BLUR_HORIZONTAL_STAGED,
            src: Src::Rgba32F,
            half: false,
        },
        Variant {
            unstaged: shaders::BLUR_HORIZONTAL_SRGBA8,
            staged: shaders::BLUR_HORIZONTAL_SRGBA8_STAGED,
            src: Src::Srgba8,
            half: false,
        },
        Variant {
            unstaged: shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF,
            staged: shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF_STAGED,
            src: Src::Srgba8,
            half: true,
        },
    ]
}

/// Random source pixels as bytes: RGBA8 words (every alpha), or RGBA32F values in [0, 1)
/// with full mantissas.
fn source_bytes(src: Src, pixels: usize, seed: u64) -> Vec<u8> {
    match src {
        Src::Rgba8 | Src::Srgba8 => random_bytes(pixels * 4, seed),
        Src::Rgba32F => {
            let words: Vec<u32> = bytemuck::cast_slice(&random_bytes(pixels * 16, seed)).to_vec();
            let values: Vec<f32> = words
                .iter()
                .map(|&w| (w >> 8) as f32 / 16_777_216.0)
                .collect();
            bytemuck::cast_slice(&values).to_vec()
        }
    }
}

/// Source pixel `i` premultiplied, as f64 (the CPU twin's input).
fn premultiplied(src: Src, bytes: &[u8], i: usize) -> [f64; 4] {
    let v: [f64; 4] = match src {
        Src::Rgba32F => {
            let f: &[f32] = bytemuck::cast_slice(&bytes[i * 16..i * 16 + 16]);
            [f[0], f[1], f[2], f[3]].map(f64::from)
        }
        Src::Rgba8 | Src::Srgba8 => {
            let b = &bytes[i * 4..i * 4 + 4];
            let unorm = |x: u8| f64::from(x) / 255.0;
            let colour = |x: u8| {
                if src == Src::Srgba8 {
                    f64::from(srgb_to_linear_cpu(x as f32 / 255.0))
                } else {
                    unorm(x)
                }
            };
            [colour(b[0]), colour(b[1]), colour(b[2]), unorm(b[3])]
        }
    };
    [v[0] * v[3], v[1] * v[3], v[2] * v[3], v[3]]
}

/// An IEEE binary16 as f32.
fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 31);
    let man = f32::from(h & 1023);
    match exp {
        0 => sign * man * 2f32.powi(-24),
        31 => f32::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15),
    }
}

/// Intermediate pixel `i` as f32s.
fn mid_pixel(bytes: &[u8], half: bool, i: usize) -> [f32; 4] {
    if half {
        let h: &[u16] = bytemuck::cast_slice(&bytes[i * 8..i * 8 + 8]);
        [h[0], h[1], h[2], h[3]].map(half_to_f32)
    } else {
        let f: &[f32] = bytemuck::cast_slice(&bytes[i * 16..i * 16 + 16]);
        [f[0], f[1], f[2], f[3]]
    }
}

fn alloc_with<B: Backend>(ctx: &Context<B>, label: &'static str, bytes: &[u8]) -> BufferHandle {
    let h = ctx
        .alloc(AllocDesc::new(label, bytes.len() as u64))
        .expect("alloc");
    ctx.upload(h, bytes).expect("upload");
    h
}

/// One horizontal-pass case: a `src_w × src_h` source (row stride `src_stride`), the
/// `dst_w × dst_h` region at `origin` written into an intermediate of row stride `dst_stride`.
#[derive(Clone, Copy, Debug)]
struct Case {
    src_w: u32,
    src_h: u32,
    src_stride: u32,
    dst_w: u32,
    dst_h: u32,
    dst_stride: u32,
    origin: [u32; 2],
    radius: u32,
}

/// Runs `kernel` on `case` into a fresh intermediate filled with 0xa5 bytes and returns all of
/// its bytes.
#[allow(clippy::too_many_arguments, reason = "one launch, all of it")]
fn run_pass<B: Backend>(
    ctx: &Context<B>,
    kernel: &KernelSource,
    staged: bool,
    case: Case,
    half: bool,
    src: BufferHandle,
    weights: BufferHandle,
) -> Vec<u8> {
    let px = if half { 8 } else { 16 };
    let fill = vec![0xa5u8; (case.dst_stride * case.dst_h) as usize * px];
    let mid = alloc_with(ctx, "intermediate", &fill);
    let p = ImageParams {
        src_w: case.src_w,
        src_h: case.src_h,
        src_stride: case.src_stride,
        dst_w: case.dst_w,
        dst_h: case.dst_h,
        dst_stride: case.dst_stride,
        ox: case.origin[0],
        oy: case.origin[1],
        radius: case.radius,
        ..Default::default()
    };
    let groups = if staged {
        [case.dst_w.div_ceil(256), case.dst_h.div_ceil(4), 1]
    } else {
        [case.dst_w.div_ceil(128), case.dst_h.div_ceil(16), 1]
    };
    ctx.dispatch(kernel, &[src, mid, weights], bytemuck::bytes_of(&p), groups)
        .expect("dispatch");
    let out = ctx.download(mid).expect("download");
    ctx.release(mid).expect("release");
    out
}

fn the_staged_pass_equals_the_unstaged_one_bit_for_bit<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let limit = ctx.backend().limits().max_workgroup_storage;
    eprintln!(
        "workgroup memory: {limit} bytes (the staged pass needs {BLUR_STAGED_WORKGROUP_BYTES})"
    );
    if limit < BLUR_STAGED_WORKGROUP_BYTES {
        eprintln!("SKIPPED: this device gives too little workgroup memory for the staged pass");
        return;
    }
    let case = |src_w, src_h, dst_w, dst_h, origin, radius| Case {
        src_w,
        src_h,
        src_stride: src_w + 3,
        dst_w,
        dst_h,
        dst_stride: dst_w + 5,
        origin,
        radius,
    };
    let cases = [
        // Whole frames: narrower than one staged workgroup, and wider than two.
        case(37, 5, 37, 5, [0, 0], 0),
        case(37, 5, 37, 5, [0, 0], 6),
        case(517, 9, 517, 9, [0, 0], 1),
        case(517, 9, 517, 9, [0, 0], 24),
        case(517, 9, 517, 9, [0, 0], 45),
        case(517, 9, 517, 9, [0, 0], BLUR_STAGED_MAX_RADIUS),
        // Regions inside larger sources, with windows reaching past their edges.
        case(700, 23, 301, 13, [397, 7], 13),
        case(700, 23, 300, 6, [11, 17], BLUR_STAGED_MAX_RADIUS),
        case(300, 8, 260, 7, [19, 1], 2),
        // Radius larger than the source is wide: every read clamps.
        case(20, 3, 18, 3, [1, 0], 31),
    ];
    for v in variants() {
        for (n, c) in cases.iter().enumerate() {
            let seed = n as u64 * 31 + c.radius as u64;
            let src_px = (c.src_stride * c.src_h) as usize;
            let src_bytes = source_bytes(v.src, src_px, seed);
            let src = alloc_with(&ctx, "source", &src_bytes);
            // Random positive weights: a misplaced tap shows.
            let taps = 2 * c.radius as usize + 1;
            let w: Vec<f32> = random_bytes(taps, seed ^ 99)
                .iter()
                .map(|&b| (f32::from(b) + 1.0) / (256.0 * taps as f32))
                .collect();
            let weights = alloc_with(&ctx, "weights", bytemuck::cast_slice(&w));
            let want = run_pass(&ctx, &v.unstaged, false, *c, v.half, src, weights);
            let got = run_pass(&ctx, &v.staged, true, *c, v.half, src, weights);
            let what = format!("{} {c:?}", v.staged.label());
            let px = if v.half { 8 } else { 16 };
            if let Some(i) = want.iter().zip(&got).position(|(a, b)| a != b) {
                let p = i / px;
                let (y, x) = (p / c.dst_stride as usize, p % c.dst_stride as usize);
                panic!(
                    "{what}: pixel ({x}, {y}) differs: staged {:?}, unstaged {:?}",
                    mid_pixel(&got, v.half, p),
                    mid_pixel(&want, v.half, p)
                );
            }
            assert_eq!(want.len(), got.len(), "{what}");
            // The unstaged pass against the CPU twin: dst(x, y) = Σ w[i] src(clamp(x + ox + i
            // - R), y + oy), premultiplied; and the padding past each row left alone.
            let worst = (0..c.dst_h as usize)
                .flat_map(|y| (0..c.dst_stride as usize).map(move |x| (x, y)))
                .map(|(x, y)| {
                    let p = y * c.dst_stride as usize + x;
                    let g = mid_pixel(&want, v.half, p);
                    if x >= c.dst_w as usize {
                        let pad = want[p * px..(p + 1) * px].iter().all(|&b| b == 0xa5);
                        assert!(pad, "{what}: padding pixel ({x}, {y}) was written");
                        return 0.0;
                    }
                    let row = (y + c.origin[1] as usize) * c.src_stride as usize;
                    let mut acc = [0f64; 4];
                    for (i, &wi) in w.iter().enumerate() {
                        let s = (x + c.origin[0] as usize + i) as i64 - i64::from(c.radius);
                        let s = s.clamp(0, i64::from(c.src_w) - 1) as usize;
                        let q = premultiplied(v.src, &src_bytes, row + s);
                        for k in 0..4 {
                            acc[k] += f64::from(wi) * q[k];
                        }
                    }
                    (0..4)
                        .map(|k| (f64::from(g[k]) - acc[k]).abs())
                        .fold(0.0, f64::max)
                })
                .fold(0.0, f64::max);
            let tolerance = if v.half { 1e-3 } else { 1e-5 };
            assert!(worst < tolerance, "{what}: off the CPU twin by {worst}");
            ctx.release(src).expect("release");
            ctx.release(weights).expect("release");
        }
    }
    ctx.wait().expect("wait");
}

/// `blur_area2` with a box of `radius` (the staged pass up to `BLUR_STAGED_MAX_RADIUS`, the
/// unstaged one past it, on GPUs with the workgroup memory) against its two passes launched by
/// hand, the horizontal one unstaged: equal bit for bit.
fn blur_area2_equals_its_unstaged_passes_on_both_sides_of_the_limit<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let staged = ctx.backend().device_info().device_type != "cpu"
        && ctx.backend().limits().max_workgroup_storage >= BLUR_STAGED_WORKGROUP_BYTES;
    eprintln!("blur_area2 runs the staged pass up to the limit here: {staged}");
    let (w, h) = (603u32, 37u32);
    let (out_w, out_h) = (250u32, 15u32);
    let origin = [41u32, 5u32];
    let formats = [
        (
            PixelFormat::Rgba8,
            shaders::BLUR_HORIZONTAL_RGBA8,
            shaders::BLUR_AREA2_HALF_TO_RGBA8,
            true,
        ),
        (
            PixelFormat::Rgba32F,
            shaders::BLUR_HORIZONTAL,
            shaders::BLUR_AREA2,
            false,
        ),
    ];
    for (format, horizontal, vertical, half) in formats {
        let src_kind = if format == PixelFormat::Rgba8 {
            Src::Rgba8
        } else {
            Src::Rgba32F
        };
        let src_bytes = source_bytes(src_kind, (w * h) as usize, 5);
        let src = alloc_with(&ctx, "source", &src_bytes);
        let out_bytes = u64::from(out_w * out_h) * format.bytes_per_pixel();
        let zeros = vec![0u8; out_bytes as usize];
        for radius in [6, BLUR_STAGED_MAX_RADIUS, BLUR_STAGED_MAX_RADIUS + 1] {
            let kind = Blur::Box { radius };
            let src_view = ImageView::new(src, w, h, format);
            let got = alloc_with(&ctx, "blur_area2", &zeros);
            blur_area2(
                &ctx,
                &src_view,
                &ImageView::new(got, out_w, out_h, format),
                origin,
                kind,
            )
            .expect("blur_area2");
            // By hand: the horizontal pass over every source row and the blurred columns,
            // then the vertical pass with the downscale.
            let weights = blur_weights(kind).expect("weights");
            let wb = alloc_with(&ctx, "weights", bytemuck::cast_slice(&weights));
            let mid_w = 2 * out_w;
            let px = if half { 8 } else { 16 };
            let mid = alloc_with(&ctx, "intermediate", &vec![0u8; (mid_w * h) as usize * px]);
            let hp = ImageParams {
                src_w: w,
                src_h: h,
                src_stride: w,
                dst_w: mid_w,
                dst_h: h,
                dst_stride: mid_w,
                ox: origin[0],
                radius,
                ..Default::default()
            };
            let groups = [mid_w.div_ceil(128), h.div_ceil(16), 1];
            ctx.dispatch(
                &horizontal,
                &[src, mid, wb],
                bytemuck::bytes_of(&hp),
                groups,
            )
            .expect("horizontal");
            let want = alloc_with(&ctx, "by hand", &zeros);
            let vp = ImageParams {
                src_w: mid_w,
                src_h: h,
                src_stride: mid_w,
                dst_w: out_w,
                dst_h: out_h,
                dst_stride: out_w,
                oy: origin[1],
                radius,
                ..Default::default()
            };
            let groups = [out_w.div_ceil(16), out_h.div_ceil(32), 1];
            ctx.dispatch(&vertical, &[mid, want, wb], bytemuck::bytes_of(&vp), groups)
                .expect("vertical");
            let (a, b) = (
                ctx.download(got).expect("download"),
                ctx.download(want).expect("download"),
            );
            assert!(
                a.iter().any(|&x| x != 0),
                "{format:?} radius {radius}: nothing written"
            );
            if let Some(i) = a.iter().zip(&b).position(|(x, y)| x != y) {
                let p = i / format.bytes_per_pixel() as usize;
                panic!(
                    "{format:?} radius {radius}: pixel ({}, {}) differs from the passes by hand",
                    p % out_w as usize,
                    p / out_w as usize
                );
            }
            for hd in [got, wb, mid, want] {
                ctx.release(hd).expect("release");
            }
        }
        ctx.release(src).expect("release");
    }
    ctx.wait().expect("wait");
}
