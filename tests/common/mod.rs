//! Test harness: contexts per backend, adapter checks, and the macro that instantiates generic
//! test bodies for every backend.
#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]

use rand::{RngCore, SeedableRng};
use vramkit::backend::wgpu::WgpuBackend;
use vramkit::{Context, ContextDesc};

/// Seeded random bytes.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

fn require_gpu() -> bool {
    std::env::var("VRAMKIT_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A wgpu context, or `None` (with the reason printed) when this machine has no adapter.
/// With `VRAMKIT_REQUIRE_GPU=1` a missing adapter fails the test instead. The adapter is printed
/// and checked against `WGPU_BACKEND`, since wgpu may otherwise fall back silently.
pub fn try_gpu(test: &str, desc: ContextDesc) -> Option<Context<WgpuBackend>> {
    match Context::new(desc) {
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
    match Context::new(desc) {
        Ok(ctx) => ctx,
        Err(e) => panic!("the adapter went away: {e}"),
    }
}

/// Whether the adapter is Mesa's lavapipe (llvmpipe).
pub fn is_lavapipe(ctx: &Context<WgpuBackend>) -> bool {
    ctx.adapter_info().name.to_lowercase().contains("llvmpipe")
}

/// Instantiates generic test bodies `fn name<B: Backend>(mk: &dyn Fn(ContextDesc) -> Context<B>)`
/// once per backend: `host::name` on host memory, `gpu::name` on the wgpu adapter.
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
