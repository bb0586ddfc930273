//! `blur_area2`: a blur and an exact 2× area downscale in the blur's two passes. Checked
//! against the CPU twins (f64 weights, the sRGB curve, premultiplied alpha) within one level
//! for 8-bit outputs, against `blur` then `resize` on the device, and region by region (a tile
//! of the output from its window of the source equals the whole output's pixels, bit for bit).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Error};
use vramkit_kernels::image::ColorOp;
use vramkit_kernels::image::{
    blur, blur_area2, blur_area2_formats, resize, Blur, ImageView, PixelFormat, ResizeFilter,
};
use vramkit_kernels::image_cpu::{
    blur_cpu, color_cpu, pack_rgba8_cpu, resize_cpu, unpack_rgba8_cpu, Rgba,
};

gpu_tests!(
    eight_bit_outputs_match_the_cpu_twins,
    it_equals_blur_then_resize,
    regions_equal_the_whole,
    bad_shapes_are_typed_errors,
);

fn image<B: Backend>(ctx: &Context<B>, w: u32, h: u32, f: PixelFormat) -> ImageView {
    let bytes = u64::from(w) * u64::from(h) * f.bytes_per_pixel();
    let handle = ctx.alloc(AllocDesc::new("image", bytes)).expect("alloc");
    ImageView::new(handle, w, h, f)
}

fn download_u32<B: Backend>(ctx: &Context<B>, img: &ImageView) -> Vec<u32> {
    bytemuck::cast_slice(&ctx.download(img.handle).expect("download")).to_vec()
}

fn download_f32<B: Backend>(ctx: &Context<B>, img: &ImageView) -> Vec<f32> {
    bytemuck::cast_slice(&ctx.download(img.handle).expect("download")).to_vec()
}

/// Random pixels with every alpha, some 0.
fn frame(w: u32, h: u32, seed: u64) -> Vec<u32> {
    bytemuck::cast_slice(&random_bytes((w * h * 4) as usize, seed)).to_vec()
}

/// The largest channel difference of two RGBA8 frames, in levels.
fn max_levels(a: &[u32], b: &[u32]) -> u32 {
    a.iter()
        .zip(b)
        .flat_map(|(&x, &y)| {
            (0..4).map(move |c| ((x >> (8 * c)) & 255).abs_diff((y >> (8 * c)) & 255))
        })
        .max()
        .unwrap_or(0)
}

/// The CPU twin: (linear from sRGB) → blur → area half → (sRGB), straight alpha at each end.
fn twin(px: &[u32], w: u32, h: u32, kind: Blur, srgb: bool) -> Vec<u32> {
    let mut img = unpack_rgba8_cpu(px);
    if srgb {
        img = color_cpu(&img, ColorOp::SrgbToLinear);
    }
    let blurred = blur_cpu(&img, w, h, kind).expect("blur_cpu");
    let mut small: Vec<Rgba> = resize_cpu(&blurred, w, h, w / 2, h / 2, ResizeFilter::Area);
    if srgb {
        small = color_cpu(&small, ColorOp::LinearToSrgb);
    }
    pack_rgba8_cpu(&small)
}

fn eight_bit_outputs_match_the_cpu_twins<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h) = (70u32, 46u32);
    let px = frame(w, h, 31);
    for (format, srgb) in [(PixelFormat::Rgba8, false), (PixelFormat::Srgba8, true)] {
        for kind in [
            Blur::Gaussian { sigma: 2.0 },
            Blur::Gaussian { sigma: 5.5 },
            Blur::Box { radius: 3 },
        ] {
            let src = image(&ctx, w, h, format);
            let dst = image(&ctx, w / 2, h / 2, format);
            ctx.upload(src.handle, bytemuck::cast_slice(&px))
                .expect("upload");
            blur_area2(&ctx, &src, &dst, [0, 0], kind).expect("blur_area2");
            // f16 intermediate (2⁻¹¹ relative) and f32 sums: under half a level before
            // rounding, so within one level of the twin after it.
            let levels = max_levels(&download_u32(&ctx, &dst), &twin(&px, w, h, kind, srgb));
            assert!(
                levels <= 1,
                "{format:?} {kind:?}: {levels} levels from the CPU twin"
            );
            for i in [src, dst] {
                ctx.release(i.handle).expect("release");
            }
        }
    }
}

fn it_equals_blur_then_resize<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h) = (66u32, 38u32);
    let px = frame(w, h, 32);
    let kind = Blur::Gaussian { sigma: 3.0 };
    // RGBA32F throughout: the same f32 arithmetic, the blurred frame in registers instead of
    // memory (only the compiler's contraction of multiply-adds may differ between kernels).
    let src8 = image(&ctx, w, h, PixelFormat::Rgba8);
    ctx.upload(src8.handle, bytemuck::cast_slice(&px))
        .expect("upload");
    let src = image(&ctx, w, h, PixelFormat::Rgba32F);
    vramkit_kernels::image::convert(&ctx, &src8, &src, [0, 0]).expect("unpack");
    let (mid, two) = (
        image(&ctx, w, h, PixelFormat::Rgba32F),
        image(&ctx, w / 2, h / 2, PixelFormat::Rgba32F),
    );
    blur(&ctx, &src, &mid, [0, 0], kind).expect("blur");
    resize(&ctx, &mid, &two, ResizeFilter::Area).expect("resize");
    let one = image(&ctx, w / 2, h / 2, PixelFormat::Rgba32F);
    blur_area2(&ctx, &src, &one, [0, 0], kind).expect("blur_area2");
    let (a, b) = (download_f32(&ctx, &one), download_f32(&ctx, &two));
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(worst <= 1e-5, "blur_area2 is {worst} from blur + resize");
    // Into sRGB-encoded RGBA8 from RGBA32F: the fused chain's last kernel.
    let out = image(&ctx, w / 2, h / 2, PixelFormat::Srgba8);
    blur_area2(&ctx, &src, &out, [0, 0], kind).expect("to srgba8");
    let want = pack_rgba8_cpu(&color_cpu(
        &b.chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect::<Vec<Rgba>>(),
        ColorOp::LinearToSrgb,
    ));
    let levels = max_levels(&download_u32(&ctx, &out), &want);
    assert!(levels <= 1, "to srgba8: {levels} levels");
    for i in [src8, src, mid, two, one, out] {
        ctx.release(i.handle).expect("release");
    }
}

fn regions_equal_the_whole<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h) = (90u32, 58u32);
    let px = frame(w, h, 33);
    let kind = Blur::Gaussian { sigma: 2.5 };
    for (sf, df) in [
        (PixelFormat::Srgba8, PixelFormat::Srgba8),
        (PixelFormat::Rgba8, PixelFormat::Rgba8),
        (PixelFormat::Rgba32F, PixelFormat::Rgba32F),
        (PixelFormat::Srgba8, PixelFormat::Rgba32F),
    ] {
        assert!(blur_area2_formats(sf, df));
        let src8 = image(&ctx, w, h, PixelFormat::Rgba8);
        ctx.upload(src8.handle, bytemuck::cast_slice(&px))
            .expect("upload");
        let src = if sf == PixelFormat::Rgba32F {
            let f = image(&ctx, w, h, sf);
            vramkit_kernels::image::convert(&ctx, &src8, &f, [0, 0]).expect("unpack");
            f
        } else {
            ImageView { format: sf, ..src8 }
        };
        let whole = image(&ctx, w / 2, h / 2, df);
        blur_area2(&ctx, &src, &whole, [0, 0], kind).expect("whole");
        let whole_bytes = ctx.download(whole.handle).expect("download");
        let bpp = df.bytes_per_pixel() as usize;
        // Output tiles (x0, y0, width, height), from the source and from a window of it
        // cut with the blur's halo (a tile as the pipeline runs it), odd sizes and edges.
        for (x0, y0, tw, th) in [
            (0u32, 0u32, 13u32, 7u32),
            (7, 5, 21, 11),
            (30, 20, 15, 9),
            (44, 28, 1, 1),
        ] {
            let tile = image(&ctx, tw, th, df);
            blur_area2(&ctx, &src, &tile, [2 * x0, 2 * y0], kind).expect("tile");
            let got = ctx.download(tile.handle).expect("download");
            for y in 0..th as usize {
                let at = ((y0 as usize + y) * (w / 2) as usize + x0 as usize) * bpp;
                assert!(
                    got[y * tw as usize * bpp..(y + 1) * tw as usize * bpp]
                        == whole_bytes[at..at + tw as usize * bpp],
                    "{sf:?} -> {df:?}: tile ({x0}, {y0}) row {y} differs from the whole"
                );
            }
            ctx.release(tile.handle).expect("release");
        }
        ctx.release(whole.handle).expect("release");
        if sf == PixelFormat::Rgba32F {
            ctx.release(src.handle).expect("release");
        }
        ctx.release(src8.handle).expect("release");
    }
}

fn bad_shapes_are_typed_errors<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let src = image(&ctx, 20, 10, PixelFormat::Rgba8);
    let dst = image(&ctx, 10, 5, PixelFormat::Rgba8);
    let kind = Blur::Gaussian { sigma: 1.0 };
    // The doubled region passes the source.
    assert!(matches!(
        blur_area2(&ctx, &src, &dst, [1, 0], kind),
        Err(Error::ShapeMismatch { .. })
    ));
    let big = image(&ctx, 11, 5, PixelFormat::Rgba8);
    assert!(matches!(
        blur_area2(&ctx, &src, &big, [0, 0], kind),
        Err(Error::ShapeMismatch { .. })
    ));
    // No kernel for RGBA8 into RGBA32F.
    let f = image(&ctx, 10, 5, PixelFormat::Rgba32F);
    assert!(!blur_area2_formats(
        PixelFormat::Rgba8,
        PixelFormat::Rgba32F
    ));
    assert!(matches!(
        blur_area2(&ctx, &src, &f, [0, 0], kind),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        blur_area2(&ctx, &src, &dst, [0, 0], Blur::Gaussian { sigma: -1.0 }),
        Err(Error::InvalidParameter { .. })
    ));
    for i in [src, dst, big, f] {
        ctx.release(i.handle).expect("release");
    }
    assert_eq!(ctx.stats().live, 0, "failed calls leaked allocations");
}
