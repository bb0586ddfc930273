//! The RGBA32F working format is f32 throughout: the default chain's 8-bit outputs are the
//! CPU twins' f32 chain rounded (within half a level and f32's last bits; an f16 intermediate
//! misrounded values), and the RGBA8 working format, which keeps the faster f16 intermediate,
//! stays within one level.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Pipeline, PixelFormat};
use vramkit_kernels::image::{Blur, ResizeFilter};
use vramkit_kernels::image_cpu::{
    blur_cpu, linear_to_srgb_cpu, resize_cpu, srgb_to_linear_cpu, Rgba,
};

gpu_tests!(the_default_chain_in_rgba32f_rounds_the_f32_chain);

/// The default chain on the CPU twins, as f32 values on the 0–255 scale before rounding.
fn twins(input: &[u8], [w, h]: [u32; 2]) -> Vec<f32> {
    let px: Vec<Rgba> = input
        .chunks_exact(4)
        .map(|p| {
            let c = |v: u8| srgb_to_linear_cpu(f32::from(v) / 255.0);
            [c(p[0]), c(p[1]), c(p[2]), f32::from(p[3]) / 255.0]
        })
        .collect();
    let blurred = blur_cpu(&px, w, h, Blur::Gaussian { sigma: 3.0 }).expect("blur");
    let small = resize_cpu(&blurred, w, h, w / 2, h / 2, ResizeFilter::Area);
    small
        .iter()
        .flat_map(|p| {
            let c = |v: f32| linear_to_srgb_cpu(v).clamp(0.0, 1.0) * 255.0;
            [c(p[0]), c(p[1]), c(p[2]), p[3].clamp(0.0, 1.0) * 255.0]
        })
        .collect()
}

fn the_default_chain_in_rgba32f_rounds_the_f32_chain<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h) = (384u32, 256u32);
    let mut input = random_bytes((w * h * 4) as usize, 17);
    for px in input.chunks_exact_mut(4) {
        px[3] = 255;
    }
    let want = twins(&input, [w, h]);
    let chain = format!("linear,blur:sigma=3,resize:{}x{}:area,srgb", w / 2, h / 2);
    // RGBA32F: rounding of the f32 value, up to f32's own last bits (the f16 intermediate
    // of the fused blur and resize gave 0.509 here). RGBA8 keeps that intermediate: one level.
    for (working, bound) in [(PixelFormat::Rgba32F, 0.502f32), (PixelFormat::Rgba8, 1.0)] {
        let p = Pipeline::new(parse_chain(&chain).expect("chain"), [w, h])
            .expect("pipeline")
            .with_working_format(working);
        let (got, _) = p.run(&ctx, &input).expect("run");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, v)| (f32::from(*g) - v).abs())
            .fold(0.0, f32::max);
        eprintln!("{working:?}: worst {worst:.4} levels from the f32 chain");
        assert!(
            worst <= bound,
            "{working:?}: {worst} levels from the f32 chain"
        );
    }
}
