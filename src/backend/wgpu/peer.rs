//! Copies between two wgpu backends ([`Storage::copy_to_peer`](crate::backend::Storage::copy_to_peer)): direct only between
//! backends of one device ([`WgpuBackend::on_same_device`]). wgpu buffers belong to one device,
//! so other pairs get `None` and the caller copies through the host. (Two backends an
//! application made with [`WgpuBackend::from_device`] from clones of one device are not known
//! to share it: wgpu 30 compares devices by ids that separate instances hand out alike.)
//!
//! Ordering on the shared queue: the source's recorded work is submitted first, then the copy
//! as the destination's submission, then an empty submission of the source's (as
//! [`after_external`](WgpuBackend::after_external) does), which completes only after the copy
//! (the queue completes in order); the source's later work is submitted after it.

use super::{WgpuBackend, WgpuBlock};
use crate::types::error::Result;
use crate::types::QueueIndex;

impl WgpuBackend {
    /// [`Storage::copy_to_peer`](crate::backend::Storage::copy_to_peer) for wgpu; see the [module docs](self).
    ///
    /// # Safety
    /// As [`Storage::copy_to_peer`](crate::backend::Storage::copy_to_peer).
    pub(super) unsafe fn copy_peer(
        &self,
        src: &WgpuBlock,
        src_offset: u64,
        peer: &WgpuBackend,
        dst: &WgpuBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<Option<(QueueIndex, QueueIndex)>> {
        if !self.shares_device(peer) {
            return Ok(None);
        }
        self.submit_now(false)?;
        src.unmap_for_gpu();
        dst.unmap_for_gpu();
        peer.record(|e| {
            e.copy_buffer_to_buffer(&src.buffer, src_offset, &dst.buffer, dst_offset, size)
        })?;
        let d = peer.submit_now(true)?;
        let s = self.submit_now(true)?;
        Ok(Some((s, d)))
    }
}
