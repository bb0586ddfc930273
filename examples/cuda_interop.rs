//! Your own CUDA code on vramkit's memory: a kernel compiled with NVRTC and launched through
//! cudarc on a stream of yours writes an allocation vramkit made for that stream.
//!
//! ```text
//! cargo run --release --features cuda --example cuda_interop
//! ```
//!
//! vramkit and cudarc share the device's primary context. `alloc_on` allocates for your stream:
//! the memory never moves, and once released it is reused at once by later requests on that
//! stream, and by other streams only after yours passed the release. Work vramkit does itself
//! (`download_vec` here) runs on its own stream, so wait for yours first.

use anyhow::Context as _;
use vramkit::backend::cuda::cudarc;
use vramkit::backend::ForeignStream;
use vramkit::{AllocDesc, Context, ContextDesc};

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};

const SQUARES: &str = r#"
extern "C" __global__ void squares(float *out, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (float)i * (float)i;
}
"#;

fn main() -> anyhow::Result<()> {
    let n: u32 = 1 << 20;
    let vk = Context::cuda(
        0,
        ContextDesc {
            budget: Some(1 << 30),
            ..Default::default()
        },
    )
    .context("vramkit on CUDA device 0")?;
    let cu = CudaContext::new(0)?;
    let stream = cu.new_stream()?;
    // SAFETY: a stream of device 0's primary context (cudarc's context is it, as vramkit's),
    // alive until the end of `main`, after vramkit forgot it.
    let mine = unsafe { ForeignStream::from_raw(stream.cu_stream() as u64) };

    let (out, ptr) = vk
        .interop()
        .alloc_on(AllocDesc::new("squares", u64::from(n) * 4).uninit(), mine)?;
    let module = cu.load_module(cudarc::nvrtc::compile_ptx(SQUARES)?)?;
    let squares = module.load_function("squares")?;
    let mut launch = stream.launch_builder(&squares);
    // The kernel takes the raw device pointer: 8 bytes, as `float *`.
    launch.arg(&ptr.address).arg(&n);
    // SAFETY: `squares` takes a pointer to `n` floats and `n`; the allocation holds `n` floats
    // (`ptr.size` bytes) and lives until released below, after the stream is synchronised.
    unsafe { launch.launch(LaunchConfig::for_num_elems(n)) }?;

    stream.synchronize()?;
    let got: Vec<f32> = vk.download_vec(out)?;
    let wrong = (0..n as usize)
        .filter(|&i| got[i] != (i as f32) * (i as f32))
        .count();
    anyhow::ensure!(wrong == 0, "{wrong} of {n} values differ from i*i");
    vk.release(out)?;
    vk.interop().forget_stream(mine)?;
    println!(
        "{n} squares written by a cudarc kernel into vramkit memory at {:#x} on stream {:#x}: all \
         match",
        ptr.address,
        mine.raw()
    );
    println!("{}", vk.stats());
    Ok(())
}
