//! Image kernel parameters out of range (blur sigma and radius, gamma), temporaries released
//! when a call fails, views whose byte counts overflow, and the CPU twins' inputs.

use vramkit::{ContextDesc, Error};
use vramkit_kernels::image::{self, Blur, ColorOp, PixelFormat};
use vramkit_kernels::image_cpu;

use crate::check::{alloc, gpu, host, host_with};
use crate::harness::Case;
use crate::image::{frames, shape, v, BOX1, EXPECTED};

use PixelFormat::{Rgba32F, Rgba8};

pub const CASES: &[Case] = &[
    Case::new("image::blur: sigma NaN", sigma_nan),
    Case::new("image::blur: sigma 0", sigma_zero),
    Case::new("image::blur: sigma -1", sigma_negative),
    Case::new("image::blur: sigma +inf", sigma_inf),
    Case::new("image::blur: sigma 1e9", sigma_huge),
    Case::new("image::blur: box radius 0", radius_zero),
    Case::new("image::blur: box radius 1025", radius_1025),
    Case::new("image::blur: box radius u32::MAX", radius_max),
    Case::new("image::color: gamma 0", gamma_zero),
    Case::new("image::color: gamma NaN", gamma_nan),
    Case::new("image::color: gamma -inf", gamma_neg_inf),
    Case::new(
        "image::blur (host): Unsupported, temporaries released",
        blur_host_no_leak,
    ),
    Case::new(
        "image::blur: intermediate past the budget, nothing leaks",
        blur_over_budget,
    ),
    Case::isolated(
        "image: u32::MAX x u32::MAX RGBA32F view (bytes overflow)",
        view_max,
    ),
    Case::isolated("image: view whose byte count wraps to 16", view_wraps),
    Case::isolated(
        "image_cpu::blur_cpu: 4 pixels for a 4x4 image",
        blur_cpu_short,
    ),
    Case::isolated(
        "image::color (gpu): source view whose byte count wraps",
        gpu_view_wraps,
    ),
];

fn bad_blur(blur: Blur, names: &[&str], hint: &str) {
    let f = frames();
    let e = expect_err!(
        image::blur(
            &f.ctx,
            &v(f.s8, 8, 8, Rgba8),
            &v(f.d8, 8, 8, Rgba8),
            [0, 0],
            blur
        ),
        Error::InvalidParameter { .. },
        [],
        [hint]
    );
    crate::check::message(&e, names, &[]);
    let leaked = f.ctx.observe().allocations().len();
    assert!(
        leaked == 4,
        "LEAK: {leaked} allocations live after the refusal, not 4"
    );
}

fn sigma(s: f32, shown: &str) {
    bad_blur(Blur::Gaussian { sigma: s }, &["sigma", shown], "341");
}

fn sigma_nan() {
    sigma(f32::NAN, "NaN");
}

fn sigma_zero() {
    sigma(0.0, "= 0");
}

fn sigma_negative() {
    sigma(-1.0, "-1");
}

fn sigma_inf() {
    sigma(f32::INFINITY, "inf");
}

fn sigma_huge() {
    sigma(1e9, "1000000000");
}

fn radius(r: u32) {
    bad_blur(
        Blur::Box { radius: r },
        &["radius", &format!("= {r}")],
        "1 to 1024",
    );
}

fn radius_zero() {
    radius(0);
}

fn radius_1025() {
    radius(1025);
}

fn radius_max() {
    radius(u32::MAX);
}

fn gamma(g: f32, shown: &str) {
    let f = frames();
    let op = ColorOp::Adjust {
        brightness: 0.0,
        contrast: 1.0,
        gamma: g,
    };
    expect_err!(
        image::color(
            &f.ctx,
            &v(f.s32, 8, 8, Rgba32F),
            &v(f.d32, 8, 8, Rgba32F),
            [0, 0],
            op
        ),
        Error::InvalidParameter { .. },
        ["gamma", shown],
        ["positive"]
    );
}

fn gamma_zero() {
    gamma(0.0, "= 0");
}

fn gamma_nan() {
    gamma(f32::NAN, "NaN");
}

fn gamma_neg_inf() {
    gamma(f32::NEG_INFINITY, "-inf");
}

/// The host runs no kernels; the weights and intermediate blur allocated go back.
fn blur_host_no_leak() {
    let f = frames();
    expect_err!(
        image::blur(
            &f.ctx,
            &v(f.s8, 8, 8, Rgba8),
            &v(f.d8, 8, 8, Rgba8),
            [0, 0],
            BOX1
        ),
        Error::Unsupported { .. },
        ["blur"],
        ["use a wgpu context"]
    );
    let live = f.ctx.observe().allocations().len();
    assert!(
        live == 4,
        "LEAK: {live} allocations live after the failed blur, not 4"
    );
}

fn blur_over_budget() {
    let ctx = host_with(ContextDesc {
        budget: Some(4 << 20),
        ..Default::default()
    });
    // 1024×512 RGBA8 (2 MiB) in and out of one buffer; the intermediate (four f16 a pixel) is
    // 4 MiB.
    let s = alloc(&ctx, "frame", 1024 * 512 * 4);
    let view = v(s, 1024, 512, Rgba8);
    expect_err!(
        image::blur(&ctx, &view, &view, [0, 0], BOX1),
        Error::OverBudget { .. },
        ["4194304"],
        ["raise the budget"]
    );
    let live = ctx.observe().allocations().len();
    assert!(
        live == 1,
        "LEAK: {live} allocations live after the refusal, not 1"
    );
}

/// `u32::MAX` on every side: the view's byte count passes 2⁶⁴.
fn view_max() {
    let f = frames();
    let big = v(f.s32, u32::MAX, u32::MAX, Rgba32F);
    let r = image::color(
        &f.ctx,
        &big,
        &v(f.d32, 8, 8, Rgba32F),
        [0, 0],
        ColorOp::Luma,
    );
    shape(r, &["4294967295|bytes"]);
}

/// 1 × (2³⁰ + 1) RGBA32F rows 2³⁰ pixels apart span 2⁶⁴ + 16 bytes: a count that wraps to 16
/// would pass a 16-byte buffer off as the image.
fn view_wraps() {
    let ctx = host();
    let h = alloc(&ctx, "sixteen", 16);
    let img = v(h, 1, (1 << 30) + 1, Rgba32F).with_stride(1 << 30);
    let r = image::color(&ctx, &img, &img, [0, 0], ColorOp::Luma);
    shape(r, &["16 bytes|1073741825"]);
}

fn blur_cpu_short() {
    let src = vec![[0.5f32; 4]; 4];
    let r = image_cpu::blur_cpu(&src, 4, 4, BOX1);
    expect_err!(r, Error::ShapeMismatch { .. }, ["16", "4"], [EXPECTED]);
}

/// On the GPU the same wrap reaches a kernel compiled without bounds checks: a source of
/// (2³¹ + 1) rows 2²⁹ pixels apart "spans" 16 bytes; reading its row 1 is 8 GiB past the
/// buffer. It must be refused before any launch.
fn gpu_view_wraps() {
    let Some(ctx) = gpu("gpu view wraps") else {
        return;
    };
    let (s, d) = (alloc(&ctx, "sixteen", 16), alloc(&ctx, "out", 16));
    let src = v(s, 1, (1 << 31) + 1, Rgba32F).with_stride(1 << 29);
    let r = image::color(&ctx, &src, &v(d, 1, 1, Rgba32F), [0, 1], ColorOp::Luma);
    if r.is_ok() {
        let _ = ctx.wait();
        let out = ctx.download(d).map(|b| crate::check::floats(&b));
        panic!(
            "NO ERROR: a kernel without bounds checks ran over a 16-byte buffer read 8 GiB past \
             its end; it wrote {out:?}"
        );
    }
    shape(r, &["16 bytes|2147483649"]);
}
