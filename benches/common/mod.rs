//! Shared by the benches: the wgpu context (or the reason there is none) and quick-mode sizes.
#![allow(dead_code, reason = "each bench uses a part")]

pub mod upload_with;

use vramkit::backend::wgpu::WgpuBackend;
use vramkit::{Context, ContextDesc};

/// `VRAMKIT_BENCH_QUICK=1` shrinks sizes and times for a fast check that the benches run.
pub fn quick() -> bool {
    std::env::var("VRAMKIT_BENCH_QUICK").is_ok_and(|v| v == "1")
}

/// `desc` with the debug settings the environment turns on added
/// ([`DebugSettings::from_env`](vramkit::DebugSettings::from_env): `VRAMKIT_BACKTRACE`,
/// `VRAMKIT_LOG_ALLOCATIONS`, `VRAMKIT_CUDA_NO_CUBLAS`, `VRAMKIT_NO_COOPERATIVE_MATRIX`), so
/// that e.g. `VRAMKIT_NO_COOPERATIVE_MATRIX=1` runs the f16 benches on the fallback kernel.
pub fn with_env(mut desc: ContextDesc) -> ContextDesc {
    desc.debug = desc.debug.or(vramkit::DebugSettings::from_env());
    desc
}

/// A wgpu context, or `None` with the reason printed.
pub fn gpu(desc: ContextDesc) -> Option<Context<WgpuBackend>> {
    match Context::new(with_env(desc)) {
        Ok(ctx) => {
            eprintln!("bench adapter: {}", ctx.adapter_info());
            Some(ctx)
        }
        Err(e) => {
            eprintln!("skipping GPU benches: {e}");
            None
        }
    }
}

/// Waits until the device is idle.
pub fn device_idle(device: &vramkit::wgpu::Device) {
    device
        .poll(vramkit::wgpu::PollType::wait_indefinitely())
        .expect("poll");
}
