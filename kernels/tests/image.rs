//! Image kernels on the GPU against their CPU twins, regions that must give the whole image's
//! pixels, poisoned surroundings, and bad input.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Error};
use vramkit_kernels::image::{
    blur, color, pack_rgba8, resize, resize_region, unpack_rgba8, Blur, ColorOp, ImageView,
    PixelFormat, ResizeFilter, ResizeRegion,
};
use vramkit_kernels::image_cpu::{
    blur_cpu, color_cpu, pack_rgba8_cpu, resize_cpu, unpack_rgba8_cpu, Rgba,
};

gpu_tests!(
    rgba8_conversion_matches_the_cpu,
    blurs_match_the_cpu_and_regions_match_the_whole,
    resizes_match_the_cpu_and_tiles_match_the_whole,
    colour_ops_match_the_cpu,
    rgba8_filters_match_the_cpu,
    kernels_touch_nothing_outside_their_region,
    bad_input_is_a_typed_error,
);

const SIZES: [(u32, u32); 4] = [(37, 23), (101, 7), (1, 50), (64, 64)];

fn random_image(w: u32, h: u32, seed: u64) -> Vec<Rgba> {
    random_bytes((w * h * 4) as usize, seed)
        .chunks_exact(4)
        .map(|c| std::array::from_fn(|i| f32::from(c[i]) / 255.0))
        .collect()
}

fn upload_f32<B: Backend>(ctx: &Context<B>, img: &[Rgba], w: u32, h: u32) -> ImageView {
    let handle = ctx
        .alloc(AllocDesc::new("img", u64::from(w * h) * 16))
        .expect("alloc");
    ctx.upload(handle, bytemuck::cast_slice(img))
        .expect("upload");
    ImageView::new(handle, w, h, PixelFormat::Rgba32F)
}

fn empty_f32<B: Backend>(ctx: &Context<B>, w: u32, h: u32) -> ImageView {
    let handle = ctx
        .alloc(AllocDesc::new("out", u64::from(w * h) * 16))
        .expect("alloc");
    ImageView::new(handle, w, h, PixelFormat::Rgba32F)
}

fn read_f32<B: Backend>(ctx: &Context<B>, img: &ImageView) -> Vec<Rgba> {
    bytemuck::cast_slice(&ctx.download(img.handle).expect("download")).to_vec()
}

fn assert_close(got: &[Rgba], want: &[Rgba], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for c in 0..4 {
            assert!(
                (g[c] - w[c]).abs() <= tol,
                "{what}: pixel {i} channel {c}: {} vs {}",
                g[c],
                w[c]
            );
        }
    }
}

fn release<B: Backend>(ctx: &Context<B>, imgs: &[&ImageView]) {
    for i in imgs {
        ctx.release(i.handle).expect("release");
    }
}

/// Packing gives integers: they match the twin exactly, except at rounding ties (v·255 + 0.5
/// within 1e-3 of an integer), where a fused and an unfused multiply-add may land one apart.
fn check_packed(got: &[u32], src: &[Rgba], what: &str) {
    check_packed_within(got, src, 1e-3, what);
}

/// As [`check_packed`], for outputs computed in f32 with a stated error: where `v·255 + 0.5` is
/// within `margin` of an integer, the GPU's value may round either way.
fn check_packed_within(got: &[u32], src: &[Rgba], margin: f64, what: &str) {
    let want = pack_rgba8_cpu(src);
    for (i, ((&g, &w), v)) in got.iter().zip(&want).zip(src).enumerate() {
        for (c, &vc) in v.iter().enumerate() {
            let (gc, wc) = ((g >> (8 * c)) & 0xFF, (w >> (8 * c)) & 0xFF);
            let x = f64::from(vc.clamp(0.0, 1.0)) * 255.0 + 0.5;
            let tie = (x - x.round()).abs() < margin;
            assert!(
                gc == wc || (tie && gc.abs_diff(wc) == 1),
                "{what}: pixel {i} channel {c}: {gc} vs {wc}"
            );
        }
    }
}

fn rgba8_conversion_matches_the_cpu<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    for (i, &(w, h)) in SIZES.iter().enumerate() {
        let px: Vec<u32> =
            bytemuck::cast_slice(&random_bytes((w * h * 4) as usize, i as u64)).to_vec();
        let src_h = ctx
            .alloc(AllocDesc::new("rgba8", u64::from(w * h) * 4))
            .expect("alloc");
        ctx.upload(src_h, bytemuck::cast_slice(&px))
            .expect("upload");
        let src = ImageView::new(src_h, w, h, PixelFormat::Rgba8);
        let f = empty_f32(&ctx, w, h);
        unpack_rgba8(&ctx, &src, &f, [0, 0]).expect("unpack");
        // x / 255 in f32: GPUs may divide through a reciprocal, within 2.5 ulp (≤ 1.5e-7).
        let unpacked = read_f32(&ctx, &f);
        assert_close(&unpacked, &unpack_rgba8_cpu(&px), 2e-7, "unpack");
        // Packing what was unpacked gives the bytes back.
        pack_rgba8(&ctx, &f, &src, [0, 0]).expect("pack");
        let back: Vec<u32> = bytemuck::cast_slice(&ctx.download(src_h).expect("download")).to_vec();
        assert_eq!(back, px, "unpack + pack {w}×{h}");
        // Out-of-range and in-between values.
        let odd: Vec<Rgba> = random_image(w, h, 50 + i as u64)
            .iter()
            .map(|p| p.map(|c| c * 1.4 - 0.2))
            .collect();
        ctx.upload(f.handle, bytemuck::cast_slice(&odd))
            .expect("upload");
        pack_rgba8(&ctx, &f, &src, [0, 0]).expect("pack");
        let back: Vec<u32> = bytemuck::cast_slice(&ctx.download(src_h).expect("download")).to_vec();
        check_packed(&back, &odd, &format!("pack {w}×{h}"));
        release(&ctx, &[&src, &f]);
    }
}

fn blurs_match_the_cpu_and_regions_match_the_whole<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let kinds = [
        Blur::Gaussian { sigma: 0.5 },
        Blur::Gaussian { sigma: 2.0 },
        Blur::Gaussian { sigma: 8.0 },
        Blur::Box { radius: 1 },
        Blur::Box { radius: 3 },
    ];
    for (i, &(w, h)) in SIZES.iter().enumerate() {
        let img = random_image(w, h, 10 + i as u64);
        let src = upload_f32(&ctx, &img, w, h);
        for kind in kinds {
            let dst = empty_f32(&ctx, w, h);
            blur(&ctx, &src, &dst, [0, 0], kind).expect("blur");
            let whole = read_f32(&ctx, &dst);
            let want = blur_cpu(&img, w, h, kind).expect("cpu");
            // Weights sum to 1 and pixels are in [0, 1]: each output is within a few ε.
            assert_close(&whole, &want, 4e-6, &format!("{kind:?} {w}×{h}"));
            // A region of the destination equals the same pixels of the whole: bit for bit.
            if w > 4 && h > 4 {
                let (rw, rh, ox, oy) = (w - 3, h - 4, 2, 3);
                let part = empty_f32(&ctx, rw, rh);
                blur(&ctx, &src, &part, [ox, oy], kind).expect("blur region");
                let got = read_f32(&ctx, &part);
                for y in 0..rh {
                    for x in 0..rw {
                        let a = got[(y * rw + x) as usize];
                        let b = whole[((y + oy) * w + x + ox) as usize];
                        assert_eq!(a, b, "{kind:?}: region pixel ({x}, {y})");
                    }
                }
                release(&ctx, &[&part]);
            }
            release(&ctx, &[&dst]);
        }
        release(&ctx, &[&src]);
    }
    assert_eq!(ctx.stats().live, 0, "blur leaked its intermediates");
}

fn resizes_match_the_cpu_and_tiles_match_the_whole<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let cases = [
        (37, 23, 19, 11),
        (37, 23, 80, 51),
        (64, 64, 21, 30),
        (101, 7, 7, 101),
        (1, 50, 3, 3),
    ];
    for (i, &(w, h, dw, dh)) in cases.iter().enumerate() {
        let img = random_image(w, h, 20 + i as u64);
        let src = upload_f32(&ctx, &img, w, h);
        for filter in [ResizeFilter::Bilinear, ResizeFilter::Area] {
            let dst = empty_f32(&ctx, dw, dh);
            resize(&ctx, &src, &dst, filter).expect("resize");
            let whole = read_f32(&ctx, &dst);
            assert_close(
                &whole,
                &resize_cpu(&img, w, h, dw, dh, filter),
                // Un-premultiplying divides by alpha, which scales the f32 rounding (fused
                // multiply-adds on GPUs) by 1 / alpha: 2.1e-6 measured on the H200.
                1e-5,
                &format!("{filter:?} {w}×{h}→{dw}×{dh}"),
            );
            // The bottom-right quarter of the output, from the source rows and columns it reads.
            let (tx, ty) = (dw / 2, dh / 2);
            let (sx, sy) = (
                ((tx as f32 * w as f32 / dw as f32) as u32).saturating_sub(1),
                (ty as f32 * h as f32 / dh as f32) as u32,
            );
            let sx = sx.min(w - 1);
            let sy = sy.saturating_sub(1).min(h - 1);
            let sub: Vec<Rgba> = (sy..h)
                .flat_map(|y| (sx..w).map(move |x| (x, y)))
                .map(|(x, y)| img[(y * w + x) as usize])
                .collect();
            let tile_src = upload_f32(&ctx, &sub, w - sx, h - sy);
            let tile = empty_f32(&ctx, dw - tx, dh - ty);
            let region = ResizeRegion {
                full_src: [w, h],
                full_dst: [dw, dh],
                src_origin: [sx, sy],
                dst_origin: [tx, ty],
            };
            resize_region(&ctx, &tile_src, &tile, filter, region).expect("resize tile");
            let got = read_f32(&ctx, &tile);
            for y in 0..dh - ty {
                for x in 0..dw - tx {
                    let a = got[(y * (dw - tx) + x) as usize];
                    let b = whole[((y + ty) * dw + x + tx) as usize];
                    assert_eq!(a, b, "{filter:?}: tile pixel ({x}, {y})");
                }
            }
            release(&ctx, &[&dst, &tile_src, &tile]);
        }
        release(&ctx, &[&src]);
    }
}

fn colour_ops_match_the_cpu<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let ops = [
        ColorOp::SrgbToLinear,
        ColorOp::LinearToSrgb,
        ColorOp::Luma,
        ColorOp::Adjust {
            brightness: 0.1,
            contrast: 1.3,
            gamma: 2.2,
        },
    ];
    let (w, h) = (37, 23);
    let img = random_image(w, h, 30);
    let src = upload_f32(&ctx, &img, w, h);
    for op in ops {
        let dst = empty_f32(&ctx, w, h);
        color(&ctx, &src, &dst, [0, 0], op).expect("colour");
        // pow on GPUs is exp2(log2): a few ulp of relative error, well under 1e-5 here.
        assert_close(
            &read_f32(&ctx, &dst),
            &color_cpu(&img, op),
            1e-5,
            &format!("{op:?}"),
        );
        release(&ctx, &[&dst]);
    }
    // In place.
    color(&ctx, &src, &src, [0, 0], ColorOp::Luma).expect("in place");
    assert_close(
        &read_f32(&ctx, &src),
        &color_cpu(&img, ColorOp::Luma),
        1e-6,
        "in place",
    );
    release(&ctx, &[&src]);
}

fn rgba8_filters_match_the_cpu<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h, dw, dh) = (37u32, 23u32, 19u32, 30u32);
    let px: Vec<u32> = bytemuck::cast_slice(&random_bytes((w * h * 4) as usize, 60)).to_vec();
    let img = unpack_rgba8_cpu(&px);
    let rgba8 = |w: u32, h: u32| {
        let handle = ctx
            .alloc(AllocDesc::new("rgba8", u64::from(w * h) * 4))
            .expect("alloc");
        ImageView::new(handle, w, h, PixelFormat::Rgba8)
    };
    let src = rgba8(w, h);
    ctx.upload(src.handle, bytemuck::cast_slice(&px))
        .expect("upload");
    let read = |img: &ImageView| -> Vec<u32> {
        bytemuck::cast_slice(&ctx.download(img.handle).expect("download")).to_vec()
    };
    // The f32 result is within a few ulp of the twin's (see the RGBA32F tests): margins follow.
    let dst = rgba8(w, h);
    let kind = Blur::Gaussian { sigma: 2.0 };
    blur(&ctx, &src, &dst, [0, 0], kind).expect("blur");
    // The blur's intermediate holds f16 (11 significant bits, values in [0, 1]): each value
    // within one f16 ulp (2⁻¹¹, whichever way the device rounds) of the f32 one, so the output
    // within 2⁻¹¹ · 255 < 0.125 levels before rounding (the weights sum to 1). Where
    // v·255 + 0.5 is within 0.126 of a tie it may round either way; elsewhere it equals the twin.
    check_packed_within(
        &read(&dst),
        &blur_cpu(&img, w, h, kind).expect("cpu"),
        0.126,
        "blur rgba8",
    );
    let adjust = ColorOp::Adjust {
        brightness: 0.1,
        contrast: 1.3,
        gamma: 0.7,
    };
    // The per-channel ops run by table (4 pixels an invocation): the region from (5, 3) is
    // 20 wide, so invocations fall past its right edge.
    let region = rgba8(20, 11);
    for op in [
        ColorOp::SrgbToLinear,
        ColorOp::LinearToSrgb,
        ColorOp::Luma,
        adjust,
    ] {
        color(&ctx, &src, &dst, [0, 0], op).expect("colour");
        let want = color_cpu(&img, op);
        check_packed_within(&read(&dst), &want, 5e-3, &format!("{op:?} rgba8"));
        color(&ctx, &src, &region, [5, 3], op).expect("colour region");
        let want: Vec<_> = (3..14)
            .flat_map(|y| (5..25).map(move |x| (y * w + x) as usize))
            .map(|i| want[i])
            .collect();
        check_packed_within(&read(&region), &want, 5e-3, &format!("{op:?} rgba8 region"));
    }
    let small = rgba8(dw, dh);
    for filter in [ResizeFilter::Bilinear, ResizeFilter::Area] {
        resize(&ctx, &src, &small, filter).expect("resize");
        let want = resize_cpu(&img, w, h, dw, dh, filter);
        check_packed_within(&read(&small), &want, 2e-3, &format!("{filter:?} rgba8"));
    }
    // Mixed formats are refused.
    let f = empty_f32(&ctx, w, h);
    assert!(matches!(
        blur(&ctx, &src, &f, [0, 0], kind),
        Err(Error::ShapeMismatch { .. })
    ));
    release(&ctx, &[&src, &dst, &small, &f, &region]);
}

fn kernels_touch_nothing_outside_their_region<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h, stride) = (29u32, 17u32, 40u32);
    let img = random_image(w, h, 40);
    let src = upload_f32(&ctx, &img, w, h);
    // The destination is a w×h image with rows 40 pixels apart inside a poisoned buffer.
    let bytes = u64::from(stride * (h + 2)) * 16;
    let poison = vec![0x7Fu8; bytes as usize];
    let buf = ctx.alloc(AllocDesc::new("poisoned", bytes)).expect("alloc");
    let dst = ImageView::new(buf, w, h, PixelFormat::Rgba32F).with_stride(stride);
    let steps: [&dyn Fn() -> vramkit::Result<vramkit::SubmissionIndex>; 4] = [
        &|| blur(&ctx, &src, &dst, [0, 0], Blur::Gaussian { sigma: 1.5 }),
        &|| resize(&ctx, &src, &dst, ResizeFilter::Area),
        &|| color(&ctx, &src, &dst, [0, 0], ColorOp::SrgbToLinear),
        &|| {
            let packed = ImageView::new(buf, w, h, PixelFormat::Rgba8).with_stride(stride * 4);
            pack_rgba8(&ctx, &src, &packed, [0, 0])
        },
    ];
    for (i, step) in steps.iter().enumerate() {
        ctx.upload(buf, &poison).expect("poison");
        step().expect("kernel");
        let out = ctx.download(buf).expect("download");
        let px = if i == 3 { 4 } else { 16 };
        let row_bytes = (stride * 16) as usize;
        for y in 0..(h + 2) as usize {
            let row = &out[y * row_bytes..(y + 1) * row_bytes];
            let written = if y < h as usize { w as usize * px } else { 0 };
            assert!(
                row[written..].iter().all(|&b| b == 0x7F),
                "step {i}: row {y} was touched past its pixels"
            );
        }
    }
    ctx.release(buf).expect("release");
    release(&ctx, &[&src]);
}

fn bad_input_is_a_typed_error<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let a = empty_f32(&ctx, 8, 8);
    let b = empty_f32(&ctx, 8, 8);
    let shape = |r: vramkit::Result<vramkit::SubmissionIndex>| {
        assert!(matches!(r, Err(Error::ShapeMismatch { .. })), "{r:?}")
    };
    let param = |r: vramkit::Result<vramkit::SubmissionIndex>| {
        assert!(matches!(r, Err(Error::InvalidParameter { .. })), "{r:?}")
    };
    // Wrong formats.
    shape(unpack_rgba8(&ctx, &a, &b, [0, 0]));
    shape(pack_rgba8(&ctx, &a, &b, [0, 0]));
    // Zero-size images, too-small buffers, regions past the source.
    shape(blur(
        &ctx,
        &ImageView::new(a.handle, 0, 8, PixelFormat::Rgba32F),
        &b,
        [0, 0],
        Blur::Box { radius: 1 },
    ));
    shape(color(
        &ctx,
        &ImageView::new(a.handle, 9, 9, PixelFormat::Rgba32F),
        &b,
        [0, 0],
        ColorOp::Luma,
    ));
    shape(color(&ctx, &a, &b, [1, 0], ColorOp::Luma));
    shape(resize(
        &ctx,
        &a,
        &ImageView::new(b.handle, 8, 8, PixelFormat::Rgba32F).with_stride(4),
        ResizeFilter::Bilinear,
    ));
    // Bad sigma, radius, gamma.
    for sigma in [0.0, -1.0, f32::NAN, f32::INFINITY, 1000.0] {
        param(blur(&ctx, &a, &b, [0, 0], Blur::Gaussian { sigma }));
    }
    param(blur(&ctx, &a, &b, [0, 0], Blur::Box { radius: 0 }));
    // A full image of 2²⁴ pixels a side: the kernels' f32 pixel coordinates would stop being
    // exact (a 1×1 tile of it is a valid region).
    let tile = ImageView::new(a.handle, 1, 1, PixelFormat::Rgba32F);
    param(resize_region(
        &ctx,
        &tile,
        &ImageView::new(b.handle, 1, 1, PixelFormat::Rgba32F),
        ResizeFilter::Area,
        ResizeRegion {
            full_src: [1 << 24, 1],
            full_dst: [1, 1],
            src_origin: [0, 0],
            dst_origin: [0, 0],
        },
    ));
    param(color(
        &ctx,
        &a,
        &b,
        [0, 0],
        ColorOp::Adjust {
            brightness: 0.0,
            contrast: 1.0,
            gamma: 0.0,
        },
    ));
    assert_eq!(ctx.stats().live, 2, "failed calls leaked allocations");
    release(&ctx, &[&a, &b]);
}
