//! The CUDA backend against the raw driver and cuBLAS on the same device, in one run:
//! alloc + release pairs (manager vs `cuMemAlloc`/`cuMemFree` vs the stream-ordered pool),
//! transfers of a 4K frame and 256 MiB (slice API, `upload_with`/`download_with`, `cuMemcpy` from
//! pinned and from pageable memory; `transfer/cuda.rs`), unified
//! memory (first kernel after host writes, i.e. migration, vs resident vs device memory) and
//! matmul 4096³ (cuBLAS through vramkit, cuBLAS direct, vramkit's own kernels).
//!
//! `cargo bench --features cuda --bench cuda` on a machine with the NVIDIA driver (NVRTC and
//! cuBLAS on `LD_LIBRARY_PATH`); without a driver it prints why and measures nothing.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use vramkit::backend::cuda::cudarc::cublas::{result as blas, sys as blas_sys};
use vramkit::backend::cuda::cudarc::driver::result as cu;
use vramkit::backend::cuda::CudaBackend;
use vramkit::{AllocDesc, Context, ContextDesc, MemoryKind};
use vramkit_kernels::{self as kernels, MatmulDims};

type Ctx = Context<CudaBackend>;

#[path = "common/matmul_variants.rs"]
mod matmul_variants;
#[path = "transfer/cuda.rs"]
mod transfer;
#[path = "common/upload_with.rs"]
mod upload_with;

fn quick() -> bool {
    std::env::var("VRAMKIT_BENCH_QUICK").is_ok_and(|v| v == "1")
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(if quick() { 1 } else { 3 }));
    g.warm_up_time(Duration::from_secs(1));
    g
}

fn sync(ctx: &Ctx) {
    // SAFETY: the backend's stream lives as long as the context.
    unsafe { cu::stream::synchronize(ctx.backend().stream()) }.expect("sync");
}

fn alloc_release(c: &mut Criterion, ctx: &Ctx) {
    let size = 64usize << 10;
    let mut g = group(c, "cuda_alloc_release");
    g.bench_function("manager_64KiB", |b| {
        b.iter(|| {
            let h = ctx
                .alloc(AllocDesc::new("bench", black_box(size as u64)).uninit())
                .expect("alloc");
            ctx.release(h).expect("release");
        })
    });
    g.bench_function("cuMemAlloc_cuMemFree_64KiB", |b| {
        b.iter(|| {
            // SAFETY: a fresh allocation, freed at once and never used.
            unsafe {
                let p = cu::malloc_sync(black_box(size)).expect("cuMemAlloc");
                cu::free_sync(p).expect("cuMemFree");
            }
        })
    });
    let stream = ctx.backend().stream();
    g.bench_function("cuMemAllocAsync_cuMemFreeAsync_64KiB", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                // SAFETY: stream-ordered allocation from the device's default pool, freed on the
                // same stream and never used.
                unsafe {
                    let p = cu::malloc_async(stream, black_box(size)).expect("cuMemAllocAsync");
                    cu::free_async(p, stream).expect("cuMemFreeAsync");
                }
            }
            sync(ctx);
            t.elapsed()
        })
    });
    g.finish();
}

fn unified(c: &mut Criterion, ctx: &Ctx) {
    let n: u32 = if quick() { 8 << 20 } else { 64 << 20 };
    let bytes = u64::from(n) * 4;
    let mut g = group(c, format!("cuda_unified_scale_{}MiB", bytes >> 20).as_str());
    // A scale kernel reads and writes every byte once.
    g.throughput(Throughput::Bytes(2 * bytes));
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    // First touch: fresh managed memory written by the host, then a kernel, so the pages
    // migrate to the device inside the timed part.
    g.bench_function("first_kernel_after_host_writes", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let xs = ctx
                    .alloc(AllocDesc::new("x", bytes).kind(MemoryKind::Unified))
                    .expect("alloc");
                let ys = ctx
                    .alloc(AllocDesc::new("y", bytes).kind(MemoryKind::Unified))
                    .expect("alloc");
                ctx.upload(xs, bytemuck::cast_slice(&x))
                    .expect("host writes");
                ctx.upload(ys, bytemuck::cast_slice(&x))
                    .expect("host writes");
                let t = Instant::now();
                kernels::scale(ctx, xs, ys, 2.0, 1.0).expect("scale");
                ctx.wait().expect("wait");
                total += t.elapsed();
                ctx.release(xs).expect("release");
                ctx.release(ys).expect("release");
                ctx.memory().trim().expect("trim");
            }
            total
        })
    });
    let kinds = [
        ("resident_unified", MemoryKind::Unified),
        ("device", MemoryKind::Device),
    ];
    for (name, kind) in kinds {
        let xs = ctx
            .alloc(AllocDesc::new("x", bytes).kind(kind))
            .expect("alloc");
        let ys = ctx
            .alloc(AllocDesc::new("y", bytes).kind(kind))
            .expect("alloc");
        ctx.upload(xs, bytemuck::cast_slice(&x)).expect("upload");
        kernels::scale(ctx, xs, ys, 2.0, 1.0).expect("scale");
        ctx.wait().expect("wait");
        g.bench_function(name, |b| {
            b.iter(|| {
                kernels::scale(ctx, xs, ys, 2.0, 1.0).expect("scale");
                ctx.wait().expect("wait");
            })
        });
        ctx.release(xs).expect("release");
        ctx.release(ys).expect("release");
    }
    g.finish();
}

fn matmul(c: &mut Criterion, ctx: &Ctx) {
    let s: u32 = if quick() { 1024 } else { 4096 };
    let d = MatmulDims { m: s, n: s, k: s };
    let len = u64::from(s) * u64::from(s);
    let mut g = group(c, format!("cuda_matmul_{s}").as_str());
    g.throughput(Throughput::Elements(2 * len * u64::from(s)));
    let a: Vec<f32> = (0..len).map(|i| (i % 17) as f32 / 17.0 - 0.5).collect();
    let [ha, hb, hc] =
        ["a", "b", "c"].map(|l| ctx.alloc(AllocDesc::new(l, len * 4)).expect("alloc"));
    ctx.upload(ha, bytemuck::cast_slice(&a)).expect("upload");
    ctx.upload(hb, bytemuck::cast_slice(&a)).expect("upload");
    for (name, k) in matmul_variants::selected(ctx.backend().has_cublas()) {
        kernels::matmul_with(ctx, ha, hb, hc, d, k).expect("warm-up");
        ctx.wait().expect("wait");
        g.bench_function(&name, |b| {
            b.iter(|| {
                kernels::matmul_with(ctx, ha, hb, hc, d, k).expect("matmul");
                ctx.wait().expect("wait");
            })
        });
    }
    if ctx.backend().has_cublas() {
        // cuBLAS called directly, on raw buffers, same shapes and math mode.
        let handle = blas::create_handle().expect("cublasCreate");
        // SAFETY: plain device allocations of `len` floats each, freed below.
        let [ra, rb, rc] =
            [(); 3].map(|()| unsafe { cu::malloc_sync(len as usize * 4) }.expect("alloc"));
        let (alpha, beta) = (1.0f32, 0.0f32);
        let n = s as i32;
        g.bench_function("cublas_direct", |b| {
            b.iter(|| {
                // SAFETY: the three buffers hold s×s floats; the default stream is synchronised
                // before the next call.
                unsafe {
                    blas::sgemm(
                        handle,
                        blas_sys::cublasOperation_t::CUBLAS_OP_N,
                        blas_sys::cublasOperation_t::CUBLAS_OP_N,
                        n,
                        n,
                        n,
                        &alpha,
                        rb as *const f32,
                        n,
                        ra as *const f32,
                        n,
                        &beta,
                        rc as *mut f32,
                        n,
                    )
                    .expect("sgemm");
                }
                cu::ctx::synchronize().expect("sync");
            })
        });
        // SAFETY: no work pending; each freed once.
        unsafe {
            for p in [ra, rb, rc] {
                cu::free_sync(p).expect("free");
            }
            blas::destroy_handle(handle).expect("destroy");
        }
    }
    g.finish();
    for h in [ha, hb, hc] {
        ctx.release(h).expect("release");
    }
}

fn bench(c: &mut Criterion) {
    let desc = ContextDesc {
        debug: vramkit::DebugSettings::from_env(),
        ..Default::default()
    };
    let ctx = match Context::cuda(0, desc) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("skipping the CUDA benches: {e}");
            return;
        }
    };
    eprintln!("bench device: {}", ctx.adapter_info());
    alloc_release(c, &ctx);
    transfer::transfers(c, &ctx);
    unified(c, &ctx);
    matmul(c, &ctx);
}

criterion_group!(benches, bench);
criterion_main!(benches);
