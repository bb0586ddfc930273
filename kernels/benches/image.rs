//! 4K image kernels on the adapter against the `image` crate and `fast_image_resize` on the CPU,
//! in one run. Both sides go from RGBA8 to RGBA8 in memory: vramkit unpacks to RGBA32F, filters
//! and packs on the device (frames stay resident; each iteration ends with the device idle).
//! `VRAMKIT_BENCH_QUICK=1` uses 1280×720.

#[path = "../../benches/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fast_image_resize as fr;
use vramkit::backend::wgpu::WgpuBackend;
use vramkit::{AllocDesc, Context, ContextDesc};
use vramkit_kernels::image::{
    blur, color, pack_rgba8, resize, unpack_rgba8, Blur, ColorOp, ImageView, PixelFormat,
    ResizeFilter,
};
use vramkit_kernels::image_cpu::{color_cpu, unpack_rgba8_cpu};

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

struct Gpu<'a> {
    ctx: &'a Context<WgpuBackend>,
    rgba8: ImageView,
    a: ImageView,
    b: ImageView,
    small8: ImageView,
    small: ImageView,
}

impl Gpu<'_> {
    fn time(
        &self,
        iters: u64,
        f: impl Fn() -> vramkit::Result<vramkit::SubmissionIndex>,
    ) -> Duration {
        let t = Instant::now();
        for _ in 0..iters {
            f().expect("kernel");
            self.ctx.wait().expect("wait");
        }
        t.elapsed()
    }
}

fn bench(c: &mut Criterion) {
    let (w, h) = if common::quick() {
        (1280, 720)
    } else {
        (3840, 2160)
    };
    let (dw, dh) = (w / 2, h / 2);
    let input = frame(w, h);
    let img = image::RgbaImage::from_raw(w, h, input.clone()).expect("image");
    let mut g = c.benchmark_group(format!("image_{w}x{h}"));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(if common::quick() { 2 } else { 10 }));
    g.throughput(Throughput::Elements(u64::from(w * h)));

    let ctx = common::gpu(ContextDesc::default());
    let gpu = ctx.as_ref().map(|ctx| {
        let alloc = |label: &'static str, w: u32, h: u32, f: PixelFormat| {
            let handle = ctx
                .alloc(AllocDesc::new(
                    label,
                    u64::from(w * h) * f.bytes_per_pixel(),
                ))
                .expect("alloc");
            ImageView::new(handle, w, h, f)
        };
        let gpu = Gpu {
            ctx,
            rgba8: alloc("rgba8", w, h, PixelFormat::Rgba8),
            a: alloc("a", w, h, PixelFormat::Rgba32F),
            b: alloc("b", w, h, PixelFormat::Rgba32F),
            small8: alloc("small rgba8", dw, dh, PixelFormat::Rgba8),
            small: alloc("small", dw, dh, PixelFormat::Rgba32F),
        };
        ctx.upload(gpu.rgba8.handle, &input).expect("upload");
        gpu
    });

    for sigma in [2.0f32, 8.0] {
        g.bench_function(format!("image_crate_blur_sigma{sigma}"), |bch| {
            bch.iter(|| image::imageops::blur(&img, sigma))
        });
        g.bench_function(format!("image_crate_fast_blur_sigma{sigma}"), |bch| {
            bch.iter(|| image::imageops::fast_blur(&img, sigma))
        });
        if let Some(gpu) = &gpu {
            g.bench_function(format!("vramkit_blur_sigma{sigma}"), |bch| {
                bch.iter_custom(|iters| {
                    gpu.time(iters, || {
                        unpack_rgba8(gpu.ctx, &gpu.rgba8, &gpu.a, [0, 0])?;
                        blur(gpu.ctx, &gpu.a, &gpu.b, [0, 0], Blur::Gaussian { sigma })?;
                        pack_rgba8(gpu.ctx, &gpu.b, &gpu.rgba8, [0, 0])
                    })
                })
            });
        }
    }

    g.bench_function("image_crate_resize_triangle", |bch| {
        bch.iter(|| image::imageops::resize(&img, dw, dh, image::imageops::FilterType::Triangle))
    });
    let src =
        fr::images::Image::from_vec_u8(w, h, input.clone(), fr::PixelType::U8x4).expect("fr image");
    let mut dst = fr::images::Image::new(dw, dh, fr::PixelType::U8x4);
    let mut resizer = fr::Resizer::new();
    for (name, filter) in [
        ("bilinear", fr::FilterType::Bilinear),
        ("box", fr::FilterType::Box),
    ] {
        let options = fr::ResizeOptions::new().resize_alg(fr::ResizeAlg::Convolution(filter));
        g.bench_function(format!("fast_image_resize_{name}"), |bch| {
            bch.iter(|| resizer.resize(&src, &mut dst, &options).expect("resize"))
        });
    }
    if let Some(gpu) = &gpu {
        for (name, filter) in [
            ("bilinear", ResizeFilter::Bilinear),
            ("area", ResizeFilter::Area),
        ] {
            g.bench_function(format!("vramkit_resize_{name}"), |bch| {
                bch.iter_custom(|iters| {
                    gpu.time(iters, || {
                        unpack_rgba8(gpu.ctx, &gpu.rgba8, &gpu.a, [0, 0])?;
                        resize(gpu.ctx, &gpu.a, &gpu.small, filter)?;
                        pack_rgba8(gpu.ctx, &gpu.small, &gpu.small8, [0, 0])
                    })
                })
            });
        }
    }

    // The image crate has no colour-space conversion: the reference is vramkit's CPU twin.
    let pixels: Vec<u32> = bytemuck::cast_slice(&input).to_vec();
    g.bench_function("cpu_twin_srgb_to_linear", |bch| {
        bch.iter(|| color_cpu(&unpack_rgba8_cpu(&pixels), ColorOp::SrgbToLinear))
    });
    if let Some(gpu) = &gpu {
        g.bench_function("vramkit_srgb_to_linear", |bch| {
            bch.iter_custom(|iters| {
                gpu.time(iters, || {
                    unpack_rgba8(gpu.ctx, &gpu.rgba8, &gpu.a, [0, 0])?;
                    color(gpu.ctx, &gpu.a, &gpu.b, [0, 0], ColorOp::SrgbToLinear)?;
                    pack_rgba8(gpu.ctx, &gpu.b, &gpu.rgba8, [0, 0])
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
