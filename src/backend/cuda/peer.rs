//! Device-to-device copies between two CUDA backends ([`Storage::copy_to_peer`]): on one
//! device (two contexts of one GPU share its primary context) a `cuMemcpyDtoDAsync`; between
//! devices that reach each other's memory (`cuDeviceCanAccessPeer` both ways) a
//! `cuMemcpyPeerAsync` with peer access enabled once per pair (`cuCtxEnablePeerAccess`), and
//! the segments involved mapped for the other device too (`cuMemSetAccess`: memory from
//! virtual memory management ignores peer access, as PyTorch's expandable segments found).
//! Devices that cannot reach each other get `None`: the caller copies through the host.
//!
//! Ordering: the copy runs on the destination's stream after an event of the source's stream
//! (everything recorded there before), and the source's stream waits for the copy's event
//! before any later work, so the memory manager may reuse or move either range in stream order
//! as always. Each side's returned submission covers the copy.

use cudarc::driver::result::{event, DriverError};
use cudarc::driver::sys::{self, CUresult};

use super::{CudaBackend, CudaBlock};
use crate::backend::Storage;
use crate::types::error::Result;
use crate::types::lock;
use crate::types::QueueIndex;

/// An event recorded on a stream, destroyed when dropped (the driver keeps its resources until
/// the work it waits for completes).
struct Mark(sys::CUevent);

impl Mark {
    /// Records an event after everything issued to `b`'s stream so far.
    fn after(b: &CudaBackend) -> Result<Self> {
        b.enter()?;
        let ev = event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| b.fail("cuEventCreate", e))?;
        let mark = Self(ev);
        // SAFETY: a live event and stream of the current context.
        unsafe { event::record(ev, b.stream.0) }.map_err(|e| b.fail("cuEventRecord", e))?;
        Ok(mark)
    }

    /// Makes `b`'s stream wait for the event before its later work.
    fn before(&self, b: &CudaBackend) -> Result<()> {
        b.enter()?;
        // SAFETY: a live, recorded event (of any context) and a live stream of the current one.
        unsafe { sys::cuStreamWaitEvent(b.stream.0, self.0, 0) }
            .result()
            .map_err(|e| b.fail("cuStreamWaitEvent", e))?;
        lock(&b.subs).record();
        Ok(())
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        // SAFETY: destroyed once; streams that wait on it keep what they need.
        let _ = unsafe { event::destroy(self.0) };
    }
}

impl CudaBackend {
    /// Whether this device and `peer`'s reach each other's memory: the same device, or peer
    /// access both ways (enabled on first use and remembered).
    fn reaches(&self, peer: &CudaBackend) -> Result<bool> {
        let (a, b) = (self.device.dev, peer.device.dev);
        if a == b {
            return Ok(true);
        }
        let mut known = lock(&self.peers);
        if let Some(&(_, ok)) = known.iter().find(|&&(d, _)| d == b) {
            return Ok(ok);
        }
        let ok = can_access(a, b).map_err(|e| self.fail("cuDeviceCanAccessPeer", e))?
            && can_access(b, a).map_err(|e| self.fail("cuDeviceCanAccessPeer", e))?;
        // A refused enable leaves the host path, not an error.
        let ok = ok
            && match self.enable_peer(peer).and_then(|()| peer.enable_peer(self)) {
                Ok(()) => true,
                Err(e) => {
                    log::warn!("vramkit: enabling CUDA peer access failed ({e}); copies go through the host");
                    false
                }
            };
        log::info!(
            "vramkit: CUDA devices {} and {}: {}",
            self.device.ordinal,
            peer.device.ordinal,
            if ok {
                "peer access"
            } else {
                "no peer access; copies go through the host"
            }
        );
        known.push((b, ok));
        Ok(ok)
    }

    /// Lets this context access `peer`'s memory (`cuMemAlloc` blocks) directly.
    fn enable_peer(&self, peer: &CudaBackend) -> Result<()> {
        self.enter()?;
        // SAFETY: both contexts are retained for the life of their backends.
        match unsafe { sys::cuCtxEnablePeerAccess(peer.device.ctx, 0) }.result() {
            Ok(()) => Ok(()),
            Err(e) if e.0 == CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            Err(e) => Err(self.fail("cuCtxEnablePeerAccess", e)),
        }
    }

    /// [`Storage::copy_to_peer`] for CUDA; see the [module docs](self).
    ///
    /// # Safety
    /// As [`Storage::copy_to_peer`].
    pub(super) unsafe fn copy_peer(
        &self,
        src: &CudaBlock,
        src_offset: u64,
        peer: &CudaBackend,
        dst: &CudaBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<Option<(QueueIndex, QueueIndex)>> {
        if !self.reaches(peer)? {
            return Ok(None);
        }
        if let Err(e) = self
            .share_segment(src, peer.device.dev)
            .and_then(|()| peer.share_segment(dst, self.device.dev))
        {
            log::warn!(
                "vramkit: sharing segments with a peer failed ({e}); copying through the host"
            );
            return Ok(None);
        }
        let (from, to) = (src.ptr + src_offset, dst.ptr + dst_offset);
        // The destination's stream waits for the source's work so far, then copies.
        Mark::after(self)?.before(peer)?;
        peer.enter()?;
        // SAFETY: both ranges lie inside live device blocks (the caller's promise), reachable
        // from `peer`'s context (same device, or peer access and segment access above).
        let issued = unsafe {
            if self.device.dev == peer.device.dev {
                sys::cuMemcpyDtoDAsync_v2(to, from, size as usize, peer.stream.0)
            } else {
                sys::cuMemcpyPeerAsync(
                    to,
                    peer.device.ctx,
                    from,
                    self.device.ctx,
                    size as usize,
                    peer.stream.0,
                )
            }
        }
        .result();
        let op = if self.device.dev == peer.device.dev {
            "cuMemcpyDtoDAsync"
        } else {
            "cuMemcpyPeerAsync"
        };
        issued.map_err(|e| peer.fail(op, e))?;
        lock(&peer.subs).record();
        let ordered = (|| {
            let d = peer.submit()?;
            // The source's later work (a reuse, a move) waits for the copy.
            Mark::after(peer)?.before(self)?;
            Ok((self.submit()?, d))
        })();
        if ordered.is_err() {
            // Nothing orders the source's later work after the copy: let it finish first.
            peer.drain();
        }
        ordered.map(Some)
    }
}

/// `cuDeviceCanAccessPeer(a, b)`.
fn can_access(a: sys::CUdevice, b: sys::CUdevice) -> Result<bool, DriverError> {
    let mut can = 0;
    // SAFETY: writes one int; both are valid devices.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, a, b) }.result()?;
    Ok(can != 0)
}
