//! A chain's leading `linear` and trailing `srgb` run inside the filters next to them
//! (`image/src/fuse.rs`): the default chain allocates three frames a tile instead of seven, and
//! gives the pixels of the same chain run op by op with the kernel functions (unpack, linear,
//! blur, resize, srgb, pack), within one level (the same arithmetic; only the order in which
//! the compiler fuses multiply-adds may differ).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, MemoryKind};
use vramkit_image::{parse_chain, Pipeline, PixelFormat};
use vramkit_kernels::image::{
    blur, color, convert, resize, Blur, ColorOp, ImageView, ResizeFilter,
};

gpu_tests!(the_default_chain_runs_fused_with_the_pixels_of_its_ops);

/// The chain op by op: RGBA8 → RGBA32F → linear → blur → area resize → srgb → RGBA8.
fn op_by_op<B: Backend>(ctx: &Context<B>, input: &[u8], [w, h]: [u32; 2]) -> Vec<u8> {
    let img = |w: u32, h: u32, f: PixelFormat| {
        let bytes = u64::from(w * h) * f.bytes_per_pixel();
        let handle = ctx.alloc(AllocDesc::new("stage", bytes)).expect("alloc");
        ImageView::new(handle, w, h, f)
    };
    let (src, a, b) = (
        img(w, h, PixelFormat::Rgba8),
        img(w, h, PixelFormat::Rgba32F),
        img(w, h, PixelFormat::Rgba32F),
    );
    let (small, out) = (
        img(w / 2, h / 2, PixelFormat::Rgba32F),
        img(w / 2, h / 2, PixelFormat::Rgba8),
    );
    ctx.upload(src.handle, input).expect("upload");
    convert(ctx, &src, &a, [0, 0]).expect("unpack");
    color(ctx, &a, &b, [0, 0], ColorOp::SrgbToLinear).expect("linear");
    blur(ctx, &b, &a, [0, 0], Blur::Gaussian { sigma: 3.0 }).expect("blur");
    resize(ctx, &a, &small, ResizeFilter::Area).expect("resize");
    color(ctx, &small, &small, [0, 0], ColorOp::LinearToSrgb).expect("srgb");
    convert(ctx, &small, &out, [0, 0]).expect("pack");
    let bytes = ctx.download(out.handle).expect("download");
    for i in [src, a, b, small, out] {
        ctx.release(i.handle).expect("release");
    }
    bytes
}

fn the_default_chain_runs_fused_with_the_pixels_of_its_ops<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h) = (198u32, 126u32);
    let input = random_bytes((w * h * 4) as usize, 13);
    let want = op_by_op(&ctx, &input, [w, h]);
    let chain = format!("linear,blur:sigma=3,resize:{}x{}:area,srgb", w / 2, h / 2);
    for working in [PixelFormat::Rgba32F, PixelFormat::Rgba8] {
        let p = Pipeline::new(parse_chain(&chain).expect("chain"), [w, h])
            .expect("pipeline")
            .with_working_format(working);
        ctx.wait().expect("wait");
        let before = ctx.stats().kind(MemoryKind::Device).allocated;
        let (got, report) = p.run(&ctx, &input).expect("run");
        let frames = ctx.stats().kind(MemoryKind::Device).allocated - before;
        // Input, blur output, output; the blur's weights and (on GPUs) its intermediate. On
        // lavapipe the intermediate is a texture, not device memory.
        assert_eq!(report.tiles, 1);
        assert!(
            frames <= 5,
            "{working:?}: {frames} device allocations for one untiled frame (unfused: 9)"
        );
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap_or(0);
        eprintln!("{working:?}: {frames} allocations, worst {worst} level(s) from op by op");
        assert!(
            worst <= 1,
            "{working:?}: {worst} levels from the op-by-op chain"
        );
    }
}
