//! One `upload_with` round, shared by the wgpu and CUDA transfer benches: the producer copies
//! `data` into each staging chunk (or, with `memset`, fills it: a producer that costs next to
//! nothing), then the device is waited for.

use vramkit::backend::Backend;
use vramkit::{BufferHandle, Context};

pub fn upload_with<B: Backend>(ctx: &Context<B>, h: BufferHandle, data: &[u8], memset: bool) {
    ctx.transfers()
        .upload_with(h, 0..data.len() as u64, |at, mut chunk| {
            if memset {
                chunk.fill(at as u8);
            } else {
                let at = at as usize;
                vramkit::transfers::copy_to_staging(&data[at..at + chunk.len()], chunk)
                    .expect("copy");
            }
        })
        .expect("upload_with");
    ctx.wait().expect("wait");
}
