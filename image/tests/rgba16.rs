//! 16-bit frames: `Pipeline::run_rgba16` against the CPU twins in 16-bit levels,
//! 16 bits kept end to end (an 8-bit path fails the exact round trip), tiled == untiled, and
//! the RGBA16 conversions and their refusals at the kernel level.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, ContextDesc, Error};
use vramkit_image::{parse_chain, Op, Pipeline, PixelFormat, Rect};
use vramkit_kernels::image::{self, Blur, ImageView, ResizeFilter};
use vramkit_kernels::image_cpu::{blur_cpu, color_cpu, resize_cpu, Rgba};

gpu_tests!(
    sixteen_bit_runs_match_the_cpu_twins,
    sixteen_bits_survive_the_pipeline,
    sixteen_bit_tiles_equal_the_whole,
    rgba16_conversions_round_trip_and_refuse_filters,
);

const W: u32 = 97;
const H: u32 = 61;

fn frame(w: u32, h: u32, seed: u64) -> Vec<u16> {
    vramkit::bytemuck::pod_collect_to_vec(&random_bytes((w * h * 8) as usize, seed))
}

fn to_f32(px: &[u16]) -> Vec<Rgba> {
    px.chunks_exact(4)
        .map(|c| std::array::from_fn(|i| f32::from(c[i]) / 65535.0))
        .collect()
}

fn to_u16(px: &[Rgba]) -> Vec<u16> {
    px.iter()
        .flat_map(|v| v.map(|c| (c.clamp(0.0, 1.0) * 65535.0 + 0.5).floor() as u16))
        .collect()
}

/// The chain on the CPU twins, in f32, rounded to 16 bits at the end.
fn cpu(p: &Pipeline, input: &[u16]) -> Vec<u16> {
    let [mut w, mut h] = p.input_size();
    let mut px = to_f32(input);
    for op in p.ops() {
        px = match *op {
            Op::Blur { sigma } => blur_cpu(&px, w, h, Blur::Gaussian { sigma }).expect("blur"),
            Op::BoxBlur { radius } => blur_cpu(&px, w, h, Blur::Box { radius }).expect("box"),
            Op::Resize {
                width,
                height,
                filter,
            } => {
                let out = resize_cpu(&px, w, h, width, height, filter);
                [w, h] = [width, height];
                out
            }
            Op::Linear => color_cpu(&px, image::ColorOp::SrgbToLinear),
            Op::Srgb => color_cpu(&px, image::ColorOp::LinearToSrgb),
            Op::Luma => color_cpu(&px, image::ColorOp::Luma),
            Op::Adjust {
                brightness,
                contrast,
                gamma,
            } => color_cpu(
                &px,
                image::ColorOp::Adjust {
                    brightness,
                    contrast,
                    gamma,
                },
            ),
        };
    }
    to_u16(&px)
}

const CHAINS: [&str; 3] = [
    "linear,blur:sigma=2,resize:48x30:area,srgb",
    "resize:150x90,luma",
    "box:radius=2,adjust:brightness=0.05;contrast=1.3;gamma=2.2",
];

fn pipeline(chain: &str) -> Pipeline {
    Pipeline::new(parse_chain(chain).expect("chain"), [W, H]).expect("pipeline")
}

fn sixteen_bit_runs_match_the_cpu_twins<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let input = frame(W, H, 16);
    for chain in CHAINS {
        let p = pipeline(chain);
        let (out, report) = p.run_rgba16(&ctx, &input).expect("run");
        let want = cpu(&p, &input);
        assert_eq!(out.len(), want.len(), "{chain}");
        let worst = out.iter().zip(&want).map(|(g, w)| g.abs_diff(*w)).max();
        eprintln!("{chain}: at most {worst:?} 16-bit levels from the CPU twins ({report:?})");
        // f32 on both sides; the GPU's pow, exp2 and division are within a few ulp, 1e-6 of a
        // value near 1, 0.07 of a 16-bit level: 2 levels is a wide margin, 1/128 of 8-bit one.
        assert!(
            worst <= Some(2),
            "{chain}: {worst:?} levels off the CPU twins"
        );
    }
}

fn sixteen_bits_survive_the_pipeline<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let input = frame(W, H, 17);
    // A bilinear resize to the same size reads each pixel whole: 16 bits in, the same 16 bits
    // out, whatever the working format (an 8-bit stage would keep 1 value in 257).
    let p = Pipeline::new(
        parse_chain(&format!("resize:{W}x{H}")).expect("chain"),
        [W, H],
    )
    .expect("pipeline");
    for format in [PixelFormat::Rgba32F, PixelFormat::Rgba8] {
        let p = p.clone().with_working_format(format);
        let (out, _) = p.run_rgba16(&ctx, &input).expect("run");
        let alpha_zero = |i: usize| input[i / 4 * 4 + 3] == 0;
        for (i, (g, w)) in out.iter().zip(&input).enumerate() {
            // Colour under alpha 0 comes out 0 (premultiplied filtering).
            let want = if alpha_zero(i) && i % 4 != 3 { 0 } else { *w };
            assert_eq!(*g, want, "{format:?}: channel {i}");
        }
    }
    match p.run_rgba16(&ctx, &input[1..]) {
        Err(e @ Error::ShapeMismatch { .. }) => {
            assert!(e.to_string().contains("RGBA16"), "{e}");
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
}

fn sixteen_bit_tiles_equal_the_whole<B: Backend>(mk: Mk<B>) {
    let input = frame(W, H, 18);
    for chain in CHAINS {
        let p = pipeline(chain);
        let (whole, _) = p
            .run_rgba16(&mk(ContextDesc::default()), &input)
            .expect("whole");
        let desc = ContextDesc {
            staging_chunk: 64 << 10,
            staging_slots: 2,
            ..Default::default()
        };
        let staging = mk(desc.clone()).transfers().staging_capacity();
        // The planner counts the 16-bit edges: a third of an RGBA32F tile plan must tile.
        let [ow, oh] = p.output_size();
        let p32 = p.clone().with_working_format(PixelFormat::Rgba32F);
        let budget = p32.tile_bytes(Rect::full(ow, oh)) / 3 + staging;
        let ctx = mk(ContextDesc {
            budget: Some(budget),
            ..desc
        });
        let (tiled, report) = p.run_rgba16(&ctx, &input).expect("tiled");
        assert!(report.tiles > 1, "{chain}: must tile");
        assert!(tiled == whole, "{chain}: tiled differs from whole");
        assert!(
            ctx.stats().peak_reserved <= budget,
            "{chain}: passed the budget"
        );
    }
}

fn rgba16_conversions_round_trip_and_refuse_filters<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (w, h) = (33u32, 9u32);
    let px = frame(w, h, 19);
    let alloc = |f: PixelFormat| {
        let bytes = u64::from(w * h) * f.bytes_per_pixel();
        ImageView::new(
            ctx.alloc(AllocDesc::new("img", bytes)).expect("alloc"),
            w,
            h,
            f,
        )
    };
    let (a, f, b) = (
        alloc(PixelFormat::Rgba16),
        alloc(PixelFormat::Rgba32F),
        alloc(PixelFormat::Rgba16),
    );
    ctx.upload(a.handle, vramkit::bytemuck::cast_slice(&px))
        .expect("upload");
    image::convert(&ctx, &a, &f, [0, 0]).expect("unpack");
    let floats: Vec<Rgba> =
        vramkit::bytemuck::pod_collect_to_vec(&ctx.download(f.handle).expect("read"));
    // v / 65535 within the GPU's division error (2.5 ulp).
    for (g, want) in floats.iter().zip(to_f32(&px)) {
        for c in 0..4 {
            assert!((g[c] - want[c]).abs() <= 2e-7, "{g:?} vs {want:?}");
        }
    }
    image::convert(&ctx, &f, &b, [0, 0]).expect("pack");
    let back: Vec<u16> =
        vramkit::bytemuck::pod_collect_to_vec(&ctx.download(b.handle).expect("read"));
    assert_eq!(back, px, "RGBA16 -> RGBA32F -> RGBA16");
    // Filters and 8-bit conversions do not take RGBA16: typed, naming what they take.
    let refused = [
        image::blur(&ctx, &a, &b, [0, 0], Blur::Box { radius: 1 }),
        image::resize(&ctx, &a, &b, ResizeFilter::Bilinear),
        image::color(&ctx, &a, &b, [0, 0], image::ColorOp::Luma),
        image::convert(&ctx, &a, &b, [0, 0]),
        image::unpack_rgba8(&ctx, &a, &f, [0, 0]),
    ];
    for r in refused {
        match r {
            Err(e @ Error::ShapeMismatch { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("Rgba16") && msg.contains("Rgba"), "{msg}");
            }
            other => panic!("expected ShapeMismatch, got {other:?}"),
        }
    }
    for v in [a, f, b] {
        ctx.release(v.handle).expect("release");
    }
}
