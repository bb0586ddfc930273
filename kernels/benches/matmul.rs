//! Matmul GFLOP/s: vramkit's kernels on the adapter against the `matrixmultiply` crate on the
//! CPU, in one run. Sizes: `VRAMKIT_MATMUL_SIZES=256,1024` (default 256,512,1024,2048).
//! Each GPU iteration is one dispatch and a wait; the operands stay on the device. Kernels:
//! `VRAMKIT_MATMUL_VARIANTS=register,tiled_bk8,tiled_bk16,...` (default all; see
//! `common/matmul_variants.rs`).

#[path = "../../benches/common/mod.rs"]
mod common;
#[path = "../../benches/common/matmul_variants.rs"]
mod matmul_variants;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use vramkit::{AllocDesc, ContextDesc};
use vramkit_kernels::{matmul_with, MatmulDims};

fn sizes() -> Vec<u32> {
    let default = if common::quick() {
        "256"
    } else {
        "256,512,1024,2048"
    };
    std::env::var("VRAMKIT_MATMUL_SIZES")
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn bench(c: &mut Criterion) {
    let ctx = common::gpu(ContextDesc::default());
    let cpu_limit: u32 = std::env::var("VRAMKIT_MATMUL_CPU_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048);
    let mut g = c.benchmark_group("matmul");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(if common::quick() { 1 } else { 5 }));
    for n in sizes() {
        let len = (n as usize) * (n as usize);
        let a: Vec<f32> = (0..len)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        let b: Vec<f32> = (0..len)
            .map(|i| ((i * 104_729) % 1000) as f32 / 1000.0)
            .collect();
        g.throughput(Throughput::Elements(2 * u64::from(n).pow(3)));
        if n <= cpu_limit {
            let mut out = vec![0f32; len];
            g.bench_with_input(BenchmarkId::new("matrixmultiply_cpu", n), &n, |bch, &n| {
                let n = n as usize;
                bch.iter(|| {
                    // SAFETY: the pointers cover n×n row-major matrices that outlive the call
                    // (row stride n, column stride 1), and `out` is not aliased by `a` or `b`.
                    unsafe {
                        matrixmultiply::sgemm(
                            n,
                            n,
                            n,
                            1.0,
                            a.as_ptr(),
                            n as isize,
                            1,
                            b.as_ptr(),
                            n as isize,
                            1,
                            0.0,
                            out.as_mut_ptr(),
                            n as isize,
                            1,
                        )
                    }
                })
            });
        }
        let Some(ctx) = &ctx else { continue };
        let bytes = len as u64 * 4;
        let ha = ctx.alloc(AllocDesc::new("a", bytes)).expect("alloc");
        let hb = ctx.alloc(AllocDesc::new("b", bytes)).expect("alloc");
        let hc = ctx
            .alloc(AllocDesc::new("c", bytes).uninit())
            .expect("alloc");
        ctx.upload(ha, bytemuck::cast_slice(&a)).expect("upload");
        ctx.upload(hb, bytemuck::cast_slice(&b)).expect("upload");
        let d = MatmulDims { m: n, n, k: n };
        for (name, kernel) in matmul_variants::selected(false) {
            matmul_with(ctx, ha, hb, hc, d, kernel).expect("warm up");
            ctx.wait().expect("wait");
            g.bench_with_input(BenchmarkId::new(&name, n), &n, |bch, _| {
                bch.iter_custom(|iters| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        matmul_with(ctx, ha, hb, hc, d, kernel).expect("matmul");
                        ctx.wait().expect("wait");
                    }
                    t.elapsed()
                })
            });
        }
        for h in [ha, hb, hc] {
            ctx.release(h).expect("release");
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
