//! Alloc + release pairs through the memory manager (host and wgpu) against
//! `device.create_buffer` + drop, in one run; and the same pairs with the timeline on
//! (`start_trace`), to show what tracing costs.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use vramkit::{AllocDesc, Context, ContextDesc};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("alloc_release");
    g.measurement_time(Duration::from_secs(if common::quick() { 1 } else { 3 }));
    let size = 64 << 10;

    let host = Context::host(ContextDesc::default());
    let traced = Context::host(ContextDesc::default());
    traced.observe().start_trace(1 << 16);
    for (name, ctx) in [
        ("host/manager_64KiB", &host),
        ("host/manager_64KiB_traced", &traced),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let h = ctx
                    .alloc(AllocDesc::new("bench", black_box(size)).uninit())
                    .expect("alloc");
                ctx.release(h).expect("release");
            })
        });
    }

    if let Some(ctx) = common::gpu(ContextDesc::default()) {
        g.bench_function("wgpu/manager_64KiB", |b| {
            b.iter(|| {
                let h = ctx
                    .alloc(AllocDesc::new("bench", black_box(size)).uninit())
                    .expect("alloc");
                ctx.release(h).expect("release");
            })
        });
        ctx.observe().start_trace(1 << 16);
        g.bench_function("wgpu/manager_64KiB_traced", |b| {
            b.iter(|| {
                let h = ctx
                    .alloc(AllocDesc::new("bench", black_box(size)).uninit())
                    .expect("alloc");
                ctx.release(h).expect("release");
            })
        });
        ctx.observe().stop_trace();
        // Zeroed allocations of reused memory record a clear; submit and wait every 64 pairs so the
        // released ranges come back.
        g.bench_function("wgpu/manager_64KiB_zeroed", |b| {
            b.iter_custom(|iters| {
                let start = std::time::Instant::now();
                for i in 0..iters {
                    let h = ctx
                        .alloc(AllocDesc::new("bench", black_box(size)))
                        .expect("alloc");
                    ctx.release(h).expect("release");
                    if i % 64 == 63 {
                        ctx.wait().expect("wait");
                    }
                }
                ctx.wait().expect("wait");
                start.elapsed()
            })
        });
        let device = ctx.backend().device().clone();
        g.bench_function("wgpu/create_buffer_drop_64KiB", |b| {
            b.iter(|| {
                let buf = device.create_buffer(&vramkit::wgpu::BufferDescriptor {
                    label: Some("bench"),
                    size: black_box(size),
                    usage: vramkit::wgpu::BufferUsages::STORAGE
                        | vramkit::wgpu::BufferUsages::COPY_SRC
                        | vramkit::wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                drop(buf);
            })
        });
        common::device_idle(&device);
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
