//! Shared by the benches: the wgpu context (or the reason there is none) and quick-mode sizes.
#![allow(dead_code, reason = "each bench uses a part")]

use vramkit::backend::wgpu::WgpuBackend;
use vramkit::{Context, ContextDesc};

/// `VRAMKIT_BENCH_QUICK=1` shrinks sizes and times for a fast check that the benches run.
pub fn quick() -> bool {
    std::env::var("VRAMKIT_BENCH_QUICK").is_ok_and(|v| v == "1")
}

/// A wgpu context, or `None` with the reason printed.
pub fn gpu(desc: ContextDesc) -> Option<Context<WgpuBackend>> {
    match Context::new(desc) {
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
