//! f16 matmul TFLOP/s (`matmul_typed` with `MatmulDtype::F16`: f16 A and B, f32 accumulation,
//! f32 C), square sizes, operands resident: on the wgpu adapter the cooperative-matrix kernel
//! (where the adapter lists 16×16×16 f16→f32) and the packed-u32 fallback; with
//! `--features cuda`, on CUDA device 0 cuBLAS `cublasGemmEx` through vramkit and the NVRTC
//! twin of the fallback, and `cublasGemmEx` called directly with an f16 C (PyTorch's fp16
//! path) and an f32 C. The PyTorch fp16 figure to compare with comes from
//! benches/reference/matmul_torch.py on the same GPU.
//!
//! `VRAMKIT_MATMUL_F16_SIZES=4096,8192` (the default; 1024 with `VRAMKIT_BENCH_QUICK=1`, 96
//! without `--bench`),
//! `VRAMKIT_MATMUL_F16_KERNELS=cooperative,tiled,vendor` (the default: all that the backend
//! runs), `VRAMKIT_MATMUL_F16_BACKENDS=wgpu,cuda` (the default: both where built).
//! `VRAMKIT_MATMUL_F16_COOP_TILES=all` (or a list of [`CoopTile`] names in lower case:
//! `b128x256,b128x256wide,b128x128sg4,…`) adds the cooperative kernel's further block shapes,
//! reported as `coop_<shape>` beside `cooperative` (the default shape, `b128x128sg4wide`). Each iteration is one `matmul_typed` and a wait. Before timing, each
//! kernel's C is checked on a sample of entries against the f64 twin (within
//! `matmul_f16_bound`), so a fast wrong kernel fails the bench instead of reporting.

#[path = "../../benches/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc};
use vramkit_kernels::{
    f16_bits_to_f32, f32_to_f16_bits, matmul_f16_kernel, matmul_typed, CoopTile, MatmulDims,
    MatmulDtype, MatmulKernel,
};

fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

fn sizes() -> Vec<u32> {
    // Without `--bench` (`cargo test --all-targets`, as CI runs it) each case runs once: a
    // small size, so that the fallback on lavapipe is a check that it runs, not minutes.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let default = if smoke {
        "96"
    } else if common::quick() {
        "1024"
    } else {
        "4096,8192"
    };
    list("VRAMKIT_MATMUL_F16_SIZES", default)
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect()
}

fn wanted(kernel: MatmulKernel) -> bool {
    let name = format!("{kernel:?}").to_lowercase();
    list("VRAMKIT_MATMUL_F16_KERNELS", "cooperative,tiled,vendor").contains(&name)
}

/// Deterministic f16 values in [−1, 1).
fn matrix(len: usize, mul: usize) -> Vec<u16> {
    (0..len)
        .map(|i| f32_to_f16_bits(((i * mul) % 2048) as f32 / 1024.0 - 1.0))
        .collect()
}

/// Checks C against the f64 sum, within K·2⁻²²·Σ|a·b|, at rows and columns 0..8, every 37th
/// (which passes through every position of a 16×16 tile and of a 64×64 subgroup part) and
/// the last.
fn check_sample(c: &[f32], a: &[u16], b: &[u16], n: usize, what: &str) {
    let mut sample: Vec<usize> = (0..8.min(n)).chain((8..n).step_by(37)).collect();
    sample.push(n - 1);
    for &i in &sample {
        for &j in &sample {
            let (mut sum, mut abs) = (0f64, 0f64);
            for p in 0..n {
                let x = f64::from(f16_bits_to_f32(a[i * n + p]));
                let y = f64::from(f16_bits_to_f32(b[p * n + j]));
                sum += x * y;
                abs += (x * y).abs();
            }
            let tol = n as f64 * 2f64.powi(-22) * abs + sum.abs() * 2f64.powi(-24);
            let got = f64::from(c[i * n + j]);
            assert!(
                (got - sum).abs() <= tol,
                "{what}: C[{i}][{j}] = {got}, expected {sum} (bound {tol:e})"
            );
        }
    }
}

/// The kernel's name in the report: `cooperative` for the default block shape, `coop_b128x256`
/// and so on for [`MatmulKernel::CooperativeWith`].
fn name(kernel: MatmulKernel) -> String {
    match kernel {
        MatmulKernel::CooperativeWith(t) => format!("coop_{t:?}").to_lowercase(),
        k => format!("{k:?}").to_lowercase(),
    }
}

/// The further cooperative block shapes `VRAMKIT_MATMUL_F16_COOP_TILES` names (`all`, or
/// [`CoopTile`] names in lower case; none by default).
fn coop_tiles() -> Vec<MatmulKernel> {
    let names = list("VRAMKIT_MATMUL_F16_COOP_TILES", "");
    CoopTile::ALL[1..]
        .iter()
        .filter(|t| {
            names
                .iter()
                .any(|n| n == "all" || *n == format!("{t:?}").to_lowercase())
        })
        .map(|&t| MatmulKernel::CooperativeWith(t))
        .collect()
}

fn run<B: Backend>(c: &mut Criterion, ctx: &Context<B>, backend: &str) {
    let mut g = c.benchmark_group(format!("matmul_f16_{backend}"));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(if common::quick() { 1 } else { 5 }));
    let kernels: Vec<MatmulKernel> = [
        MatmulKernel::Vendor,
        MatmulKernel::Cooperative,
        MatmulKernel::Tiled,
    ]
    .into_iter()
    .filter(|&k| wanted(k) && matmul_f16_kernel(ctx, k).is_ok())
    .chain(
        coop_tiles()
            .into_iter()
            .filter(|&k| matmul_f16_kernel(ctx, k).is_ok()),
    )
    .collect();
    eprintln!(
        "matmul_f16 on {}: Auto runs {:?}; measuring {kernels:?}",
        ctx.adapter_info(),
        matmul_f16_kernel(ctx, MatmulKernel::Auto)
    );
    for n in sizes() {
        let len = n as usize * n as usize;
        let a = matrix(len, 7919);
        let b = matrix(len, 104_729);
        let half_bytes = |v: &[u16]| v.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<u8>>();
        let ha = ctx
            .alloc(AllocDesc::new("a", len as u64 * 2))
            .expect("alloc");
        let hb = ctx
            .alloc(AllocDesc::new("b", len as u64 * 2))
            .expect("alloc");
        let hc = ctx
            .alloc(AllocDesc::new("c", len as u64 * 4).uninit())
            .expect("alloc");
        ctx.upload(ha, &half_bytes(&a)).expect("upload");
        ctx.upload(hb, &half_bytes(&b)).expect("upload");
        let d = MatmulDims { m: n, n, k: n };
        g.throughput(Throughput::Elements(2 * u64::from(n).pow(3)));
        for &kernel in &kernels {
            let name = name(kernel);
            matmul_typed(ctx, ha, hb, hc, d, MatmulDtype::F16, kernel).expect("warm up");
            ctx.wait().expect("wait");
            let out = ctx.download(hc).expect("download");
            check_sample(bytemuck::cast_slice(&out), &a, &b, n as usize, &name);
            g.bench_with_input(BenchmarkId::new(name, n), &n, |bch, _| {
                bch.iter_custom(|iters| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        matmul_typed(ctx, ha, hb, hc, d, MatmulDtype::F16, kernel).expect("matmul");
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

fn bench(c: &mut Criterion) {
    let backends = list("VRAMKIT_MATMUL_F16_BACKENDS", "wgpu,cuda");
    if backends.iter().any(|b| b == "wgpu") {
        if let Some(ctx) = common::gpu(ContextDesc::default()) {
            run(c, &ctx, "wgpu");
        }
    }
    #[cfg(feature = "cuda")]
    if backends.iter().any(|b| b == "cuda") {
        match Context::cuda(0, common::with_env(ContextDesc::default())) {
            Ok(ctx) => {
                run(c, &ctx, "cuda");
                if ctx.backend().has_cublas() {
                    cublas_direct(c);
                }
            }
            Err(e) => eprintln!("skipping the CUDA f16 matmul: {e}"),
        }
    }
}

/// `cublasGemmEx` called directly on raw buffers, f16 A and B, `CUBLAS_COMPUTE_32F`, with an
/// f16 C (PyTorch's fp16 `mm`) and with an f32 C (what vramkit's vendor path computes): how
/// much of a gap to PyTorch is vramkit's and how much the wider C's.
#[cfg(feature = "cuda")]
fn cublas_direct(c: &mut Criterion) {
    use vramkit::backend::cuda::cudarc::cublas::{result as blas, sys};
    use vramkit::backend::cuda::cudarc::driver::result as cu;
    let mut g = c.benchmark_group("matmul_f16_cublas_direct");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(if common::quick() { 1 } else { 5 }));
    let handle = blas::create_handle().expect("cublasCreate");
    for n in sizes() {
        let len = n as usize * n as usize;
        // SAFETY: plain device allocations, freed below; their contents do not matter for the
        // timing (cuBLAS reads whatever is there).
        let [ra, rb, rc] = [2, 2, 4].map(|e| unsafe { cu::malloc_sync(len * e) }.expect("alloc"));
        g.throughput(Throughput::Elements(2 * u64::from(n).pow(3)));
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ni = n as i32;
        for (name, c_type) in [
            ("f16_out", sys::cudaDataType::CUDA_R_16F),
            ("f32_out", sys::cudaDataType::CUDA_R_32F),
        ] {
            g.bench_with_input(BenchmarkId::new(name, n), &n, |bch, _| {
                bch.iter(|| {
                    // SAFETY: the buffers hold n×n values of their types (C's buffer fits f32);
                    // alpha and beta are f32 as CUBLAS_COMPUTE_32F asks; the context is
                    // synchronised before the next call.
                    unsafe {
                        blas::gemm_ex(
                            handle,
                            sys::cublasOperation_t::CUBLAS_OP_N,
                            sys::cublasOperation_t::CUBLAS_OP_N,
                            ni,
                            ni,
                            ni,
                            (&alpha as *const f32).cast(),
                            rb as *const std::ffi::c_void,
                            sys::cudaDataType::CUDA_R_16F,
                            ni,
                            ra as *const std::ffi::c_void,
                            sys::cudaDataType::CUDA_R_16F,
                            ni,
                            (&beta as *const f32).cast(),
                            rc as *mut std::ffi::c_void,
                            c_type,
                            ni,
                            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
                        )
                        .expect("gemm_ex");
                    }
                    cu::ctx::synchronize().expect("sync");
                })
            });
        }
        // SAFETY: no work pending; each freed once.
        unsafe {
            for p in [ra, rb, rc] {
                cu::free_sync(p).expect("free");
            }
        }
    }
    // SAFETY: made above, no work pending.
    unsafe { blas::destroy_handle(handle) }.expect("destroy");
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
