//! CUDA memory: the block type, making and freeing blocks of each kind, and moving managed
//! memory to where it is used next. Growable device blocks (segments) are in
//! [`segment`](super::segment).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;

use super::{driver, CudaBackend};
use crate::backend::{LinearTexture, Storage};
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::{MemoryKind, QueueIndex};

/// A block of CUDA memory: device, managed, or pinned host memory (whose host address is also
/// its device address under unified addressing).
#[derive(Debug)]
pub struct CudaBlock {
    pub(super) ptr: u64,
    /// Bytes usable from `ptr`; a segment's grows and shrinks.
    pub(super) size: AtomicU64,
    pub(super) kind: MemoryKind,
    /// Managed memory: the whole block was prefetched to the device and the host has not
    /// touched it since, so kernels need no prefetch.
    pub(super) on_device: AtomicBool,
    /// The physical memory mapped into a segment's address range; `None` for a block from
    /// `cuMemAlloc`, `cuMemAllocManaged` or `cuMemHostAlloc`.
    pub(super) segment: Option<super::segment::Segment>,
}

impl CudaBlock {
    /// The block's address (`CUdeviceptr`), for interop.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The block's size in bytes.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    pub(super) fn host_ptr(&self, offset: u64, len: usize) -> Result<*mut u8> {
        if !self.kind.host_visible() {
            return Err(Error::Backend {
                message: "host access to a device-only CUDA block".into(),
            });
        }
        if offset.saturating_add(len as u64) > self.size() {
            return Err(Error::Backend {
                message: format!(
                    "host access to bytes {offset}..+{len} of a {}-byte block",
                    self.size()
                ),
            });
        }
        Ok((self.ptr + offset) as *mut u8)
    }
}

impl CudaBackend {
    pub(super) fn location(&self, host: bool) -> sys::CUmemLocation {
        sys::CUmemLocation {
            type_: if host {
                sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST
            } else {
                sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE
            },
            id: if host { 0 } else { self.device.dev },
        }
    }

    /// Migrates managed memory ahead of its use, ordered on the stream: for the host, the range
    /// it touches; for kernels, the whole block, once until the host touches it again (a
    /// prefetch of resident pages still walks them: half the speed of a kernel on them).
    pub(super) fn prefetch(
        &self,
        block: &CudaBlock,
        offset: u64,
        size: u64,
        host: bool,
    ) -> Result<()> {
        if block.kind != MemoryKind::Unified || !self.concurrent_managed {
            return Ok(());
        }
        let (offset, size) = if host {
            block.on_device.store(false, Ordering::Relaxed);
            (offset, size)
        } else if block.on_device.swap(true, Ordering::Relaxed) {
            return Ok(());
        } else {
            (0, block.size())
        };
        // SAFETY: the range lies inside a live managed block.
        unsafe {
            cu::mem_prefetch_async(
                block.ptr + offset,
                size as usize,
                self.location(host),
                self.stream.0,
            )
        }
        .map_err(|e| self.fail("cuMemPrefetchAsync", e))?;
        lock(&self.subs).recorded = true;
        Ok(())
    }

    /// Before host access to managed memory: bring it to the host and wait for the stream.
    pub(super) fn host_access(&self, block: &CudaBlock, offset: u64, len: usize) -> Result<()> {
        if block.kind == MemoryKind::Unified {
            self.enter()?;
            self.prefetch(block, offset, len as u64, true)?;
            // SAFETY: the stream is alive.
            unsafe { cu::stream::synchronize(self.stream.0) }
                .map_err(|e| self.fail("cuStreamSynchronize", e))?;
        }
        Ok(())
    }

    /// The error for a failed allocation of `requested` bytes: [`Error::OutOfMemory`] when the
    /// driver had none.
    pub(super) fn refused(
        &self,
        op: &'static str,
        e: DriverError,
        requested: u64,
        kind: MemoryKind,
    ) -> Error {
        if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            Error::OutOfMemory {
                requested,
                kind,
                detail: driver::describe(e),
            }
        } else {
            self.fail(op, e)
        }
    }

    /// A zeroed block of `kind`: `cuMemAlloc` (cleared on the stream), `cuMemAllocManaged`
    /// (cleared now) or pinned `cuMemHostAlloc`.
    pub(super) fn new_block(&self, size: u64, kind: MemoryKind) -> Result<CudaBlock> {
        self.supports(kind)?;
        self.enter()?;
        if kind == MemoryKind::Device && self.vmm.is_some() {
            return self.new_segment(size);
        }
        self.new_plain_block(size, kind)
    }

    /// A block of its own driver allocation, never a segment (a texture's linear memory).
    pub(super) fn new_plain_block(&self, size: u64, kind: MemoryKind) -> Result<CudaBlock> {
        self.enter()?;
        let bytes = usize::try_from(size).map_err(|_| Error::TooLarge {
            label: "CUDA block".into(),
            requested: size,
            max: usize::MAX as u64,
            unit: "bytes",
            what: "address space",
        })?;
        let oom = |op, e| self.refused(op, e, size, kind);
        let ptr = match kind {
            // A block of kind `Texture` (the memory manager never asks for one) is device
            // memory, as the linear memory behind a texture is.
            MemoryKind::Device | MemoryKind::Texture => {
                // SAFETY: plain allocation; cleared below before any use.
                let p = unsafe { cu::malloc_sync(bytes) }.map_err(|e| oom("cuMemAlloc", e))?;
                // New blocks read as zeros; the clear is ordered before all later work.
                // SAFETY: `p` is a fresh allocation of `bytes`.
                unsafe { cu::memset_d8_async(p, 0, bytes, self.stream.0) }
                    .map_err(|e| self.fail("cuMemsetD8Async", e))?;
                lock(&self.subs).recorded = true;
                p
            }
            MemoryKind::Unified => {
                // SAFETY: plain allocation, attached globally (any stream may use it).
                let p = unsafe {
                    cu::malloc_managed(bytes, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)
                }
                .map_err(|e| oom("cuMemAllocManaged", e))?;
                // SAFETY: `p` is a fresh allocation of `bytes`; the synchronous clear finishes
                // before the host may touch it.
                unsafe { cu::memset_d8_sync(p, 0, bytes) }
                    .map_err(|e| self.fail("cuMemsetD8", e))?;
                p
            }
            MemoryKind::Upload | MemoryKind::Readback => {
                // SAFETY: pinned host allocation, mapped into the device's address space.
                let p = unsafe { cu::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
                    .map_err(|e| oom("cuMemHostAlloc", e))?;
                // SAFETY: `p` points to `bytes` writable bytes nobody else uses yet.
                unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
                p as u64
            }
        };
        Ok(CudaBlock {
            ptr,
            size: AtomicU64::new(size),
            kind,
            on_device: AtomicBool::new(false),
            segment: None,
        })
    }

    /// Frees a block made by [`new_block`](Self::new_block). A failure is recorded for the next
    /// call that can fail.
    ///
    /// # Safety
    /// 1. No unfinished work uses the block.
    pub(super) unsafe fn drop_block(&self, block: CudaBlock) {
        if let Err(e) = self.device.bind() {
            self.deferred.record(e);
            return;
        }
        // No submitted work uses the block; work recorded but not yet marked by an event (the
        // clear of a new block) may: let it finish first.
        self.settle();
        if let Some(segment) = &block.segment {
            // SAFETY: as the caller guarantees; the segment is dropped once, with its block.
            unsafe { self.drop_segment(block.ptr, segment) };
            return;
        }
        // SAFETY: the block came from `alloc_block` with this kind and is freed once.
        let r = unsafe {
            match block.kind {
                MemoryKind::Upload | MemoryKind::Readback => {
                    cu::free_host(block.ptr as *mut std::ffi::c_void)
                }
                MemoryKind::Device | MemoryKind::Unified | MemoryKind::Texture => {
                    cu::free_sync(block.ptr)
                }
            }
        };
        if let Err(e) = r {
            self.record_err("cuMemFree", e);
        }
    }
}

/// A texture of the CUDA backend: pitched linear device memory (kernels index its rows; see
/// [`LinearTexture`]).
pub type CudaTexture = LinearTexture<CudaBlock>;

impl CudaBackend {
    /// Records `cuMemcpyAsync` of each `(src, dst, len)` run, in order.
    ///
    /// # Safety
    /// 1. Every run lies inside live memory of this context on both sides.
    pub(super) unsafe fn copy_runs(
        &self,
        runs: impl Iterator<Item = (u64, u64, u64)>,
    ) -> Result<QueueIndex> {
        self.enter()?;
        for (src, dst, len) in runs {
            // SAFETY: the caller keeps both ranges inside live memory; with unified addressing
            // every block's address is valid for cuMemcpyAsync.
            unsafe { sys::cuMemcpyAsync(dst, src, len as usize, self.stream.0) }
                .result()
                .map_err(|e| self.fail("cuMemcpyAsync", e))?;
        }
        Ok(lock(&self.subs).record())
    }
}
