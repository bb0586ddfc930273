//! RGBA8 chains hold the stages from `linear` up to the `srgb` that ends them in RGBA32F
//! (8-bit linear light lost 8–13 levels in the shadows): which stages, that the
//! planner counts them, and a shadow gradient within 1 level of the RGBA32F run where 8-bit
//! linear stages are measured several levels off.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::Mk;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc};
use vramkit_image::{parse_chain, Pipeline, PixelFormat, Rect};
use vramkit_kernels::image::{blur, color, Blur, ColorOp, ImageView};
use PixelFormat::{Rgba32F, Rgba8};

gpu_tests!(an_rgba8_chain_keeps_the_shadows_of_linear_light);

const W: u32 = 160;
const H: u32 = 96;

fn pipeline(chain: &str, format: PixelFormat) -> Pipeline {
    Pipeline::new(parse_chain(chain).expect("chain"), [W, H])
        .expect("pipeline")
        .with_working_format(format)
}

#[test]
fn linear_stages_of_rgba8_chains_are_rgba32f_and_counted() {
    for (chain, want) in [
        (
            "linear,blur:sigma=2,srgb",
            &[Rgba8, Rgba32F, Rgba32F, Rgba8][..],
        ),
        ("blur:sigma=2,luma", &[Rgba8, Rgba8, Rgba8]),
        ("linear,luma", &[Rgba8, Rgba32F, Rgba32F]),
        (
            "srgb,linear,srgb,linear",
            &[Rgba8, Rgba8, Rgba32F, Rgba8, Rgba32F],
        ),
    ] {
        assert_eq!(pipeline(chain, Rgba8).stage_formats(), want, "{chain}");
        let all32 = vec![Rgba32F; want.len()];
        assert_eq!(pipeline(chain, Rgba32F).stage_formats(), all32, "{chain}");
    }
    // The blur between two RGBA32F stages, with its RGBA32F intermediate, is the peak.
    let whole = Rect::full(W, H);
    let p = pipeline("linear,blur:sigma=2,srgb", Rgba8);
    assert!(
        p.tile_bytes(whole) >= whole.area() * 48,
        "{}",
        p.tile_bytes(whole)
    );
    assert!(p.largest_buffer(whole) >= whole.area() * 16);
    // An 8-bit blur: two RGBA8 stages and the intermediate (and alignment slack).
    let p8 = pipeline("blur:sigma=2", Rgba8);
    assert!(
        p8.tile_bytes(whole) < whole.area() * 25,
        "{}",
        p8.tile_bytes(whole)
    );
}

/// A dark gradient: every channel from 0 to 40 of 255, in different directions, with fine
/// steps the blur has to average.
fn shadows() -> Vec<u8> {
    let mut px = Vec::with_capacity((W * H * 4) as usize);
    for y in 0..H {
        for x in 0..W {
            let r = x * 40 / W;
            let g = y * 40 / H;
            let b = (x + 3 * y) % 41;
            px.extend([r as u8, g as u8, b as u8, 255]);
        }
    }
    px
}

fn max_diff(a: &[u8], b: &[u8]) -> u8 {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap_or(0)
}

/// The chain with every stage in 8 bits, as RGBA8 chains ran before: kernels from RGBA8 to
/// RGBA8 only.
fn all_8_bit<B: Backend>(ctx: &Context<B>, input: &[u8]) -> Vec<u8> {
    let img = || {
        let h = ctx
            .alloc(AllocDesc::new("img", u64::from(W * H) * 4))
            .expect("alloc");
        ImageView::new(h, W, H, Rgba8)
    };
    let (a, b) = (img(), img());
    ctx.upload(a.handle, input).expect("upload");
    color(ctx, &a, &b, [0, 0], ColorOp::SrgbToLinear).expect("linear");
    blur(ctx, &b, &a, [0, 0], Blur::Gaussian { sigma: 2.0 }).expect("blur");
    color(ctx, &a, &b, [0, 0], ColorOp::LinearToSrgb).expect("srgb");
    let out = ctx.download(b.handle).expect("download");
    for v in [a, b] {
        ctx.release(v.handle).expect("release");
    }
    out
}

fn an_rgba8_chain_keeps_the_shadows_of_linear_light<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let input = shadows();
    let chain = "linear,blur:sigma=2,srgb";
    let (full, _) = pipeline(chain, Rgba32F).run(&ctx, &input).expect("rgba32f");
    let (rgba8, _) = pipeline(chain, Rgba8).run(&ctx, &input).expect("rgba8");
    let old = all_8_bit(&ctx, &input);
    let (now, before) = (max_diff(&rgba8, &full), max_diff(&old, &full));
    eprintln!("{chain} in RGBA8: {now} levels from RGBA32F; with 8-bit linear stages {before}");
    assert!(now <= 1, "RGBA8 is {now} levels off RGBA32F");
    assert!(
        before > 4,
        "8-bit linear stages must show here ({before} levels)"
    );
}
