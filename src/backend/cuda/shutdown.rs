//! Shutting the backend down: pending work finishes, then events, cuBLAS and the stream go,
//! before the context is released (field order).

use cudarc::driver::result as cu;

use super::{driver, CudaBackend};
use crate::types::lock;

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if self.device.bind().is_err() {
            return;
        }
        // Every range queued is unmapped, and the thread stops, while the stream it waits for
        // still exists.
        if let Some(u) = self.unmapper.take() {
            for (op, e) in u.flush() {
                log::warn!("vramkit: {op} failed at drop: {}", driver::describe(e));
            }
        }
        // SAFETY: the stream is alive; waiting lets pending work finish before teardown.
        if let Err(e) = unsafe { cu::stream::synchronize(self.stream.0) } {
            log::warn!(
                "vramkit: CUDA stream failed at drop: {}",
                driver::describe(e)
            );
        }
        lock(&self.subs).destroy();
        lock(&self.marks).destroy();
        drop(self.blas.take());
        // SAFETY: nothing uses the stream after this.
        if let Err(e) = unsafe { cu::stream::destroy(self.stream.0) } {
            log::warn!(
                "vramkit: destroying the CUDA stream failed: {}",
                driver::describe(e)
            );
        }
    }
}
