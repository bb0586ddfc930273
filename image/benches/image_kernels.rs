//! Image kernels against the memory floor: a resident 4K RGBA8 frame, each
//! operation RGBA8 in and RGBA8 out as the pipeline runs it, on wgpu (and on CUDA with
//! `--features cuda`). The floor is a plain copy of the frame with `vramkit::backend::BUFFER_COPY`
//! (33 MB read, 33 MB written), timed the same way.
//!
//! Each figure is the median over rounds of `iters` calls, each call followed by a submit so
//! the device works while the host records the next, and the device idle at each round's end:
//! per-call throughput, max(host recording, device time). `record` is the host's part alone
//! (the round's calls before its wait), so a figure near `record` is bound by the host, or by
//! a call that waits for the device (an upload waits for its staging slot's last copy).
//! `VRAMKIT_BENCH_QUICK=1` uses 1280×720; without `--bench` (as `cargo test --all-targets` runs
//! it) a 96×64 frame once. References for the same machine: `benches/reference/image_cupy.py`.

#[path = "../../benches/common/mod.rs"]
mod common;

use std::time::Instant;

use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Result};
use vramkit_image::{parse_chain, test_chart, Pipeline};
use vramkit_kernels::image::{
    blur, blur_area2, blur_weights, color, resize, Blur, ColorOp, ImageParams, ImageView,
    PixelFormat, ResizeFilter, BLUR_RUN,
};
use vramkit_kernels::shaders;

/// Median per-call seconds of `f` and of its host part alone.
fn time<B: Backend>(
    ctx: &Context<B>,
    rounds: usize,
    iters: u32,
    f: &dyn Fn() -> Result<vramkit::SubmissionIndex>,
) -> (f64, f64) {
    f().expect("warm-up");
    ctx.wait().expect("wait");
    let mut total = Vec::new();
    let mut record = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..iters {
            f().expect("call");
            ctx.submit().expect("submit");
        }
        record.push(t.elapsed().as_secs_f64() / f64::from(iters));
        ctx.wait().expect("wait");
        total.push(t.elapsed().as_secs_f64() / f64::from(iters));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut total), median(&mut record))
}

/// One benchmarked call: a label and the launch.
type Case<'a> = (
    &'static str,
    Box<dyn Fn() -> Result<vramkit::SubmissionIndex> + 'a>,
);

fn frame(w: u32, h: u32) -> Vec<u8> {
    (0..w * h)
        .flat_map(|i| {
            let (x, y) = (i % w, i / w);
            [
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                ((x ^ y) & 0xFF) as u8,
                255,
            ]
        })
        .collect()
}

fn run<B: Backend>(ctx: &Context<B>, name: &str, smoke: bool) {
    let (w, h, rounds, iters) = match (smoke, common::quick()) {
        (true, _) => (96u32, 64u32, 1, 1),
        (false, true) => (1280, 720, 3, 5),
        (false, false) => (3840, 2160, 9, 20),
    };
    let (dw, dh) = (w / 2, h / 2);
    let alloc = |label, w: u32, h: u32, f: PixelFormat| {
        let bytes = u64::from(w * h) * f.bytes_per_pixel();
        let handle = ctx.alloc(AllocDesc::new(label, bytes)).expect("alloc");
        ImageView::new(handle, w, h, f)
    };
    let src = alloc("src", w, h, PixelFormat::Rgba8);
    let dst = alloc("dst", w, h, PixelFormat::Rgba8);
    let small = alloc("small", dw, dh, PixelFormat::Rgba8);
    let (lin, blurred, small32) = (
        alloc("linear", w, h, PixelFormat::Rgba32F),
        alloc("blurred", w, h, PixelFormat::Rgba32F),
        alloc("small32", dw, dh, PixelFormat::Rgba32F),
    );
    ctx.upload(src.handle, &frame(w, h)).expect("upload");
    let words = w * h;
    let copy = || {
        // `vramkit::backend::BUFFER_COPY` params: { n: u32 }; workgroups of 256 (n < 65,535 · 256).
        ctx.dispatch(
            &vramkit::backend::BUFFER_COPY,
            &[src.handle, dst.handle],
            vramkit::bytemuck::bytes_of(&words),
            [words.div_ceil(256), 1, 1],
        )
    };
    let gauss = |sigma| move || blur(ctx, &src, &dst, [0, 0], Blur::Gaussian { sigma });
    // The blur's two passes alone (bounds-checked builds through `Context::dispatch`), with
    // the weights and the f16 intermediate made once: the kernels without the per-call work.
    let mid = ctx
        .alloc(AllocDesc::new("intermediate", u64::from(w * h) * 8))
        .expect("alloc");
    let weights: Vec<_> = [2.0f32, 8.0]
        .iter()
        .map(|&sigma| {
            let wts = blur_weights(Blur::Gaussian { sigma }).expect("weights");
            let hnd = ctx
                .alloc(AllocDesc::new("weights", wts.len() as u64 * 4))
                .expect("alloc");
            ctx.upload(hnd, vramkit::bytemuck::cast_slice(&wts))
                .expect("upload");
            (hnd, (wts.len() / 2) as u32)
        })
        .collect();
    let passes = |i: usize| {
        let (wts, radius) = weights[i];
        move || {
            let p = ImageParams {
                src_w: w,
                src_h: h,
                src_stride: w,
                dst_w: w,
                dst_h: h,
                dst_stride: w,
                radius,
                ..Default::default()
            };
            let params = vramkit::bytemuck::bytes_of(&p);
            let hg = [w.div_ceil(16 * BLUR_RUN), h.div_ceil(16), 1];
            let vg = [w.div_ceil(16), h.div_ceil(16 * BLUR_RUN), 1];
            let hb = [src.handle, mid, wts];
            ctx.dispatch(&shaders::BLUR_HORIZONTAL_RGBA8, &hb, params, hg)?;
            let vb = [mid, dst.handle, wts];
            ctx.dispatch(&shaders::BLUR_VERTICAL_RGBA8, &vb, params, vg)
        }
    };
    let chain = || {
        // The default chain as an RGBA8 pipeline runs it (stages from linear to srgb RGBA32F).
        color(ctx, &src, &lin, [0, 0], ColorOp::SrgbToLinear)?;
        blur(ctx, &lin, &blurred, [0, 0], Blur::Gaussian { sigma: 3.0 })?;
        resize(ctx, &blurred, &small32, ResizeFilter::Area)?;
        color(ctx, &small32, &small, [0, 0], ColorOp::LinearToSrgb)
    };
    // The same chain as the pipeline runs it on 8-bit frames (image/src/fuse.rs): the blur
    // reads the frame as sRGB-encoded RGBA8, the resize writes it so; three kernels (as it ran
    // before blur_area2).
    let (srgb_in, srgb_out) = (
        ImageView {
            format: PixelFormat::Srgba8,
            ..src
        },
        ImageView {
            format: PixelFormat::Srgba8,
            ..small
        },
    );
    let fused = || {
        blur(
            ctx,
            &srgb_in,
            &blurred,
            [0, 0],
            Blur::Gaussian { sigma: 3.0 },
        )?;
        resize(ctx, &blurred, &srgb_out, ResizeFilter::Area)
    };
    // As the pipeline runs it now: the blur and the half-size area resize in one `blur_area2`
    // (two kernels, the blurred frame never in memory).
    let area2 = || {
        blur_area2(
            ctx,
            &srgb_in,
            &srgb_out,
            [0, 0],
            Blur::Gaussian { sigma: 3.0 },
        )
    };
    let cases: Vec<Case<'_>> = vec![
        ("copy (floor)", Box::new(copy)),
        ("blur sigma=2", Box::new(gauss(2.0))),
        ("blur sigma=8", Box::new(gauss(8.0))),
        ("blur passes only, s=2", Box::new(passes(0))),
        ("blur passes only, s=8", Box::new(passes(1))),
        (
            "resize area -> half",
            Box::new(|| resize(ctx, &src, &small, ResizeFilter::Area)),
        ),
        (
            "resize bilinear -> half",
            Box::new(|| resize(ctx, &src, &small, ResizeFilter::Bilinear)),
        ),
        (
            "srgb -> linear",
            Box::new(|| color(ctx, &src, &dst, [0, 0], ColorOp::SrgbToLinear)),
        ),
        ("default chain, 4 ops", Box::new(chain)),
        ("default chain, fused", Box::new(fused)),
        ("default chain, blur_area2", Box::new(area2)),
    ];
    println!("{name}: {w}x{h} RGBA8 resident, median of {rounds} rounds x {iters} calls");
    // `blocks`: driver allocations the pools made while the case ran (0 when every buffer of
    // every call came from the pools' cached blocks).
    println!(
        "{:<26} {:>10} {:>10} {:>7}",
        "operation", "us/call", "record_us", "blocks"
    );
    for (label, f) in &cases {
        let before = ctx.stats().block_allocations;
        let (total, record) = time(ctx, rounds, iters, f.as_ref());
        let blocks = ctx.stats().block_allocations - before;
        println!(
            "{label:<26} {:>10.1} {:>10.1} {blocks:>7}",
            total * 1e6,
            record * 1e6
        );
    }
    let (copy_total, _) = time(ctx, rounds, 1, &copy);
    println!("{:<26} {:>10.1}", "copy, one call + wait", copy_total * 1e6);
    end_to_end(ctx, w, h, rounds);
}

/// A frame end to end, host RGBA8 in and out, as the 4K tool runs it (`Pipeline::run`, the
/// default chain: a new output frame each call), and into an output the caller keeps
/// (`Pipeline::run_into`, as a video loop would), in both working formats; and the transfers
/// alone, for the breakdown.
fn end_to_end<B: Backend>(ctx: &Context<B>, w: u32, h: u32, rounds: usize) {
    let median = |f: &mut dyn FnMut()| {
        f();
        let mut v: Vec<f64> = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e3
    };
    let chain = format!("linear,blur:sigma=3,resize:{}x{}:area,srgb", w / 2, h / 2);
    let input = test_chart(w, h);
    let frame = ctx
        .alloc(AllocDesc::new("frame", input.len() as u64))
        .expect("alloc");
    let mut out = vec![0u8; input.len() / 4];
    let up = median(&mut || ctx.upload(frame, &input).expect("upload"));
    let down = median(&mut || {
        ctx.transfers()
            .download_into(frame, 0, &mut out)
            .expect("download")
    });
    println!(
        "upload {w}x{h} RGBA8: {up:.2} ms; download {}x{}: {down:.2} ms",
        w / 2,
        h / 2
    );
    ctx.release(frame).expect("release");
    for working in [PixelFormat::Rgba32F, PixelFormat::Rgba8] {
        let p = Pipeline::new(parse_chain(&chain).expect("chain"), [w, h])
            .expect("pipeline")
            .with_working_format(working);
        let mut tiles = 0;
        let ms = median(&mut || {
            let (_, r) = p.run(ctx, &input).expect("run");
            tiles = r.tiles;
        });
        println!("end to end, working {working:?}: {ms:.2} ms per frame ({tiles} tile(s))");
        let [ow, oh] = p.output_size();
        let mut kept = vec![0u8; ow as usize * oh as usize * 4];
        let ms = median(&mut || {
            p.run_into(ctx, &input, &mut kept).expect("run_into");
        });
        println!("end to end into a kept output, working {working:?}: {ms:.2} ms per frame");
    }
}

fn main() {
    // `cargo test --all-targets` runs this without `--bench`: a smoke run on a small frame.
    let smoke = !std::env::args().any(|a| a == "--bench");
    if let Some(ctx) = common::gpu(ContextDesc::default()) {
        run(&ctx, &format!("wgpu ({})", ctx.adapter_info()), smoke);
    }
    #[cfg(feature = "cuda")]
    match Context::cuda(0, common::with_env(ContextDesc::default())) {
        Ok(ctx) => run(&ctx, "cuda", smoke),
        Err(e) => eprintln!("skipping the CUDA backend: {e}"),
    }
}
