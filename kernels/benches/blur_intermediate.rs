//! Where a blur keeps its intermediate: a buffer or a texture (the horizontal pass
//! `textureStore`s, the vertical pass `textureLoad`s, so the column-wise reads go through the
//! texture's 2-D layout). Both are vramkit's blur kernels (`shaders::BLUR_*`, the texture ones
//! composed with the `src_texture` / `dst_texture` io preludes) launched the same way
//! (`Textures::dispatch`, bounds-checked) on a resident 4K RGBA32F frame; `kernels::image::blur`
//! (which picks by the rule these figures set, see `kernels/src/blur_intermediate.rs`) is printed
//! beside them. `VRAMKIT_BENCH_QUICK=1` uses 1280×720 and fewer rounds; without `--bench` (as
//! `cargo test --all-targets` runs it) a 96×64 frame once.

#[path = "../../benches/common/mod.rs"]
mod common;

use std::time::Instant;

use vramkit::backend::wgpu::WgpuBackend;
use vramkit::backend::KernelSource;
use vramkit::texture::{KernelArg, TextureDesc, TextureFormat, TextureUsage};
use vramkit::{AllocDesc, Context, ContextDesc};
use vramkit_kernels::image::{
    blur, blur_weights, Blur, ImageParams, ImageView, PixelFormat, BLUR_RUN,
};
use vramkit_kernels::shaders::{
    BLUR_HORIZONTAL, BLUR_HORIZONTAL_TO_TEXTURE, BLUR_VERTICAL, BLUR_VERTICAL_FROM_TEXTURE,
};

/// Median seconds of one call of `f` over `rounds` rounds of `iters` calls, the device idle at
/// each round's end.
fn time(ctx: &Context<WgpuBackend>, rounds: usize, iters: u32, f: &dyn Fn()) -> f64 {
    f();
    ctx.wait().expect("wait");
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            ctx.wait().expect("wait");
            t.elapsed().as_secs_f64() / f64::from(iters)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(ctx) = common::gpu(ContextDesc::default()) else {
        return;
    };
    // `cargo test --all-targets` runs this without `--bench`: a smoke run on a small frame.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let (w, h, rounds, iters) = match (smoke, common::quick()) {
        (true, _) => (96u32, 64u32, 1, 1),
        (false, true) => (1280, 720, 3, 2),
        (false, false) => (3840, 2160, 7, 10),
    };
    let px = u64::from(w * h);
    let buf = |label| ctx.alloc(AllocDesc::new(label, px * 16)).expect("alloc");
    let (src, dst, tmp) = (buf("src"), buf("dst"), buf("tmp"));
    let tex = ctx
        .textures()
        .alloc(
            TextureDesc::new("tmp", w, h, TextureFormat::Rgba32Float)
                .usage(TextureUsage::SAMPLED | TextureUsage::STORAGE),
        )
        .expect("texture");
    let frame: Vec<f32> = (0..px * 4).map(|i| (i % 251) as f32 / 251.0).collect();
    ctx.upload(src, bytemuck::cast_slice(&frame))
        .expect("upload");
    let [hb, ht, vb, vt] = [
        BLUR_HORIZONTAL,
        BLUR_HORIZONTAL_TO_TEXTURE,
        BLUR_VERTICAL,
        BLUR_VERTICAL_FROM_TEXTURE,
    ];
    // Each invocation writes 4 pixels along its pass (shaders/image_blur.wgsl).
    let h_groups = [w.div_ceil(16 * BLUR_RUN), h.div_ceil(16), 1];
    let v_groups = [w.div_ceil(16), h.div_ceil(16 * BLUR_RUN), 1];
    println!("blur intermediate, {w}x{h} RGBA32F, median of {rounds}x{iters}");
    println!("sigma  buffer_ms  texture_ms  texture/buffer  library_blur_ms");
    for sigma in [2.0f32, 8.0] {
        let weights = blur_weights(Blur::Gaussian { sigma }).expect("weights");
        let wb = ctx
            .alloc(AllocDesc::new("weights", weights.len() as u64 * 4))
            .expect("alloc");
        ctx.upload(wb, bytemuck::cast_slice(&weights))
            .expect("upload");
        // The params (shaders/params/image.wgsl): the whole frame, rows `src` and `dst` pixels
        // apart (a power of two in the texture, as the library's blur passes).
        let radius = (weights.len() / 2) as u32;
        let region = |src_stride: u32, dst_stride: u32| -> Vec<u8> {
            let p = ImageParams {
                src_w: w,
                src_h: h,
                src_stride,
                dst_w: w,
                dst_h: h,
                dst_stride,
                radius,
                ..Default::default()
            };
            bytemuck::bytes_of(&p).to_vec()
        };
        let pow2 = w.next_power_of_two();
        let (rows, to_texture, from_texture) = (region(w, w), region(w, pow2), region(pow2, w));
        let run = |k: &KernelSource, a: KernelArg, b: KernelArg, params: &[u8]| {
            let groups = if k.entry() == "horizontal" {
                h_groups
            } else {
                v_groups
            };
            ctx.textures()
                .dispatch(k, &[], &[a, b, wb.into()], params, groups)
                .expect("dispatch");
        };
        let buffer = time(&ctx, rounds, iters, &|| {
            run(&hb, src.into(), tmp.into(), &rows);
            run(&vb, tmp.into(), dst.into(), &rows);
        });
        let texture = time(&ctx, rounds, iters, &|| {
            run(&ht, src.into(), tex.into(), &to_texture);
            run(&vt, tex.into(), dst.into(), &from_texture);
        });
        let (a, b) = (
            ImageView::new(src, w, h, PixelFormat::Rgba32F),
            ImageView::new(dst, w, h, PixelFormat::Rgba32F),
        );
        let library = time(&ctx, rounds, iters, &|| {
            blur(&ctx, &a, &b, [0, 0], Blur::Gaussian { sigma }).expect("blur");
        });
        // Both variants give the same pixels (a check that they are the same blur).
        run(&hb, src.into(), tmp.into(), &rows);
        run(&vb, tmp.into(), dst.into(), &rows);
        let by_buffer = ctx.download(dst).expect("download");
        run(&ht, src.into(), tex.into(), &to_texture);
        run(&vt, tex.into(), dst.into(), &from_texture);
        assert!(
            ctx.download(dst).expect("download") == by_buffer,
            "the texture variant computes other pixels"
        );
        println!(
            "{sigma:>5}  {:>9.3}  {:>10.3}  {:>14.2}  {:>15.3}",
            buffer * 1e3,
            texture * 1e3,
            texture / buffer,
            library * 1e3
        );
        ctx.release(wb).expect("release");
    }
}
