//! Allocate, upload, run a kernel, read back, release, and print the counters.
//!
//! `cargo run --release --example quickstart [-- --backend cuda]` (cuda: a build with
//! `--features cuda`).

use clap::Parser;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc};

#[derive(Parser)]
struct Args {
    /// wgpu, or cuda (a build with `--features cuda`).
    #[arg(long, default_value = "wgpu")]
    backend: String,
}

fn main() -> anyhow::Result<()> {
    env_logger::init();
    let desc = ContextDesc {
        budget: Some(64 << 20),
        // VRAMKIT_BACKTRACE=1, VRAMKIT_LOG_ALLOCATIONS=1, ... (see DebugSettings::from_env).
        debug: vramkit::DebugSettings::from_env(),
        ..Default::default()
    };
    match Args::parse().backend.as_str() {
        "wgpu" => run(Context::new(desc)?),
        #[cfg(feature = "cuda")]
        "cuda" => run(Context::cuda(0, desc)?),
        other => anyhow::bail!("backend `{other}` is not available in this build"),
    }
}

fn run<B: Backend>(ctx: Context<B>) -> anyhow::Result<()> {
    println!("device: {}", ctx.adapter_info());

    let n: u32 = 1 << 20;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let bytes = u64::from(n) * 4;
    let xs = ctx.alloc(AllocDesc::new("x", bytes))?;
    let ys = ctx.alloc(AllocDesc::new("y", bytes).uninit())?;
    ctx.upload(xs, bytemuck::cast_slice(&x))?;

    // y = 2 x + 1 on the device, checked against the CPU twin.
    vramkit_kernels::scale(&ctx, xs, ys, 2.0, 1.0)?;
    let y_bytes = ctx.download(ys)?;
    let y: &[f32] = bytemuck::cast_slice(&y_bytes);
    let expected = vramkit_kernels::scale_cpu(&x, 2.0, 1.0);
    let wrong = y.iter().zip(&expected).filter(|(y, e)| y != e).count();
    println!(
        "y = 2x + 1 over {n} values: {wrong} wrong (y[3] = {})",
        y[3]
    );
    println!("after the kernel:\n{}", ctx.stats());

    ctx.release(xs)?;
    ctx.release(ys)?;
    ctx.wait()?;
    println!("after release:\n{}", ctx.stats());
    anyhow::ensure!(wrong == 0, "{wrong} values differ from the CPU result");
    Ok(())
}
