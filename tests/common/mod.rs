//! Test harness: contexts per backend, adapter checks, and the macro that instantiates generic
//! test bodies for every backend.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]

pub mod streams;

use rand::{RngCore, SeedableRng};
use vramkit::backend::wgpu::WgpuBackend;
use vramkit::backend::Backend;
use vramkit::{Context, ContextDesc};

/// Makes contexts of one backend: test bodies written once take one.
pub type Mk<'a, B> = &'a dyn Fn(ContextDesc) -> Context<B>;

/// How many of `release` seeds (or rounds) a randomised test runs: all in a release build, a
/// third (at least one) in a debug build, which checks the same paths for overflow and debug
/// assertions at a tenth of the speed.
pub fn rounds(release: u64) -> u64 {
    if cfg!(debug_assertions) {
        (release / 3).max(1)
    } else {
        release
    }
}

/// Seeded random bytes.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// `desc` with the debug settings the environment turns on added
/// ([`DebugSettings::from_env`](vramkit::DebugSettings::from_env): `VRAMKIT_BACKTRACE`,
/// `VRAMKIT_LOG_ALLOCATIONS`, `VRAMKIT_CUDA_NO_CUBLAS`, `VRAMKIT_NO_COOPERATIVE_MATRIX`), so
/// that e.g. `VRAMKIT_NO_COOPERATIVE_MATRIX=1` runs the f16 tests on the fallback kernel.
pub fn with_env(mut desc: ContextDesc) -> ContextDesc {
    desc.debug = desc.debug.or(vramkit::DebugSettings::from_env());
    desc
}

fn require_gpu() -> bool {
    std::env::var("VRAMKIT_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A wgpu context, or `None` (with the reason printed) when this machine has no adapter.
/// With `VRAMKIT_REQUIRE_GPU=1` a missing adapter fails the test instead. The adapter is printed
/// and checked against `WGPU_BACKEND`, since wgpu may otherwise fall back silently.
pub fn try_gpu(test: &str, desc: ContextDesc) -> Option<Context<WgpuBackend>> {
    match Context::new(with_env(desc)) {
        Ok(ctx) => {
            let info = ctx.backend().adapter_info();
            eprintln!(
                "{test}: adapter `{}` on {:?} ({:?})",
                info.name, info.backend, info.device_type
            );
            if let Some(wanted) = vramkit::wgpu::Backends::from_env() {
                assert!(
                    wanted.contains(vramkit::wgpu::Backends::from(info.backend)),
                    "WGPU_BACKEND asks for {wanted:?} but the adapter is on {:?}",
                    info.backend
                );
            }
            Some(ctx)
        }
        Err(e) if require_gpu() => panic!("{test}: VRAMKIT_REQUIRE_GPU=1 but there is no GPU: {e}"),
        Err(e) => {
            eprintln!(
                "SKIPPED {test}: no GPU adapter ({e}); set VRAMKIT_REQUIRE_GPU=1 to fail instead"
            );
            None
        }
    }
}

/// A wgpu context for a test that already found an adapter.
pub fn gpu(desc: ContextDesc) -> Context<WgpuBackend> {
    match Context::new(with_env(desc)) {
        Ok(ctx) => ctx,
        Err(e) => panic!("the adapter went away: {e}"),
    }
}

/// Whether the adapter is Mesa's lavapipe (llvmpipe).
pub fn is_lavapipe<B: Backend>(ctx: &Context<B>) -> bool {
    ctx.adapter_info().name.to_lowercase().contains("llvmpipe")
}

/// Whether the context runs on CUDA.
pub fn is_cuda<B: Backend>(ctx: &Context<B>) -> bool {
    ctx.adapter_info().api == "CUDA"
}

/// A CUDA context on device 0, or `None` (with the reason printed) when this machine has no
/// NVIDIA driver. With `VRAMKIT_REQUIRE_CUDA=1` a missing driver fails the test instead (CI has
/// no NVIDIA GPU and sets only `VRAMKIT_REQUIRE_GPU`).
#[cfg(feature = "cuda")]
pub fn try_cuda(
    test: &str,
    desc: ContextDesc,
) -> Option<Context<vramkit::backend::cuda::CudaBackend>> {
    match Context::cuda(0, with_env(desc)) {
        Ok(ctx) => {
            eprintln!("{test}: CUDA device `{}`", ctx.adapter_info());
            Some(ctx)
        }
        Err(e) if std::env::var("VRAMKIT_REQUIRE_CUDA").is_ok_and(|v| v == "1") => {
            panic!("{test}: VRAMKIT_REQUIRE_CUDA=1 but CUDA is not available: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED {test}: no CUDA ({e}); set VRAMKIT_REQUIRE_CUDA=1 to fail instead");
            None
        }
    }
}

/// A CUDA context for a test that already found the device.
#[cfg(feature = "cuda")]
pub fn cuda(desc: ContextDesc) -> Context<vramkit::backend::cuda::CudaBackend> {
    match Context::cuda(0, with_env(desc)) {
        Ok(ctx) => ctx,
        Err(e) => panic!("the CUDA device went away: {e}"),
    }
}

/// Instantiates generic test bodies `fn name<B: Backend>(mk: Mk<B>)` once per backend:
/// `host::name` on host memory, then as [`gpu_tests!`] does.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod host {
            $(
                #[test]
                fn $name() {
                    super::$name(&|d| vramkit::Context::host(d));
                }
            )*
        }
        $crate::gpu_tests!($($name),*);
    };
}

/// Instantiates generic test bodies `fn name<B: Backend>(mk: Mk<B>)` once per GPU backend:
/// `gpu::name` on the wgpu adapter, `cuda::name` on CUDA device 0 (feature `cuda`). Each skips
/// (or fails, see [`try_gpu`] and `try_cuda`) where its backend is missing.
#[macro_export]
macro_rules! gpu_tests {
    ($($name:ident),* $(,)?) => {
        #[cfg(feature = "cuda")]
        mod cuda {
            $(
                #[test]
                fn $name() {
                    let test = concat!("cuda::", stringify!($name));
                    if $crate::common::try_cuda(test, Default::default()).is_none() {
                        return;
                    }
                    super::$name(&|d| $crate::common::cuda(d));
                }
            )*
        }
        mod gpu {
            $(
                #[test]
                fn $name() {
                    let test = concat!("gpu::", stringify!($name));
                    if $crate::common::try_gpu(test, Default::default()).is_none() {
                        return;
                    }
                    super::$name(&|d| $crate::common::gpu(d));
                }
            )*
        }
    };
}

/// A context description with `budget` and small staging chunks (64 KiB), so that copies cross
/// many chunk boundaries.
pub fn budget_desc(budget: u64) -> ContextDesc {
    ContextDesc {
        budget: Some(budget),
        staging_chunk: 64 << 10,
        ..Default::default()
    }
}

/// A device set of contexts made by `mk`, one per budget in `budgets`, with the set's `total`.
pub fn device_set<B: Backend>(
    mk: Mk<B>,
    budgets: &[u64],
    total: Option<u64>,
) -> vramkit::devices::DeviceSet<B> {
    vramkit::devices::DeviceSet::from_contexts(
        budgets.iter().map(|&b| mk(budget_desc(b))).collect(),
        total,
    )
    .expect("a set of contexts")
}
