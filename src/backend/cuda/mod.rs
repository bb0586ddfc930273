//! The CUDA backend (cargo feature `cuda`): device memory in growable segments of virtual memory
//! (`segment.rs`; `cuMemAlloc` blocks where the device lacks it or [`CudaConfig::segments`] is
//! off), unified memory from `cuMemAllocManaged` (prefetched to the device before kernels and to
//! the host before host access, with [`MemoryAdvice`]), pinned host staging from
//! `cuMemHostAlloc`, NVRTC-compiled kernels and cuBLAS matmul, all on one stream whose events
//! mark submissions.
//!
//! Kernels are compiled by NVRTC once per machine: the PTX is kept on disk
//! (`$XDG_CACHE_HOME/vramkit/kernels`, else `~/.cache/vramkit/kernels`; `VRAMKIT_KERNEL_CACHE`
//! names another folder, or `off`), and later processes load it without NVRTC.
//!
//! The driver, NVRTC and cuBLAS are loaded at run time (cudarc's `dynamic-loading`): a binary
//! built with the feature runs on machines without them and reports [`Error::NoAdapter`] or
//! [`Error::Unsupported`] with the reason.

mod blas;
mod block;
#[cfg(feature = "nccl")]
pub(crate) mod collective;
mod compute;
mod config;
mod driver;
mod host_copy;
mod kernel;
mod kernel_cache;
mod marks;
mod open;
mod page_map;
mod page_move;
mod peer;
mod segment;
mod shutdown;
mod submissions;
mod unmap;
mod unmapper;

use std::sync::OnceLock;

pub use block::{CudaBlock, CudaTexture};

pub use cudarc;
use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;
pub use kernel::CudaKernel;

use super::{
    BackendLimits, DeferredError, DeviceInfo, ForeignStream, MemoryInfo, PageGrid, Storage,
    StreamMark,
};
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::texture::{TextureCopy, TextureDesc};
use crate::types::write_only::WriteOnly;
use crate::types::{MemoryAdvice, MemoryKind, QueueIndex};
pub use config::CudaConfig;
use driver::Device;
use submissions::Submissions;

/// The CUDA stream all work is ordered on.
struct Stream(sys::CUstream);

// SAFETY: a stream handle may be used from any thread with its context current.
unsafe impl Send for Stream {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Stream {}

/// The CUDA backend. See the [module docs](self).
pub struct CudaBackend {
    // Field order is drop order: cuBLAS and the stream go before the context.
    blas: OnceLock<Option<blas::Blas>>,
    /// Whether cuBLAS may be loaded ([`CudaConfig::vendor_blas`]).
    vendor_blas: bool,
    stream: Stream,
    subs: std::sync::Mutex<Submissions>,
    /// Events marking streams the backend does not own.
    marks: std::sync::Mutex<marks::Marks>,
    lost: OnceLock<String>,
    /// Errors of calls that return none (`free_block`, a shrink's unmapping), for the next
    /// call that can fail.
    deferred: DeferredError,
    limits: BackendLimits,
    info: DeviceInfo,
    /// `major * 10 + minor`, for NVRTC's `--gpu-arch`.
    compute_capability: i32,
    /// Whether managed memory migrates on demand (prefetch and advice apply).
    concurrent_managed: bool,
    managed: bool,
    /// Virtual memory management, when device blocks are segments.
    vmm: Option<segment::Vmm>,
    /// Other devices met in copies, and whether they reach this one directly (`peer.rs`).
    peers: std::sync::Mutex<Vec<(sys::CUdevice, bool)>>,
    /// Unmaps in the background ([`CudaConfig::background_unmap`]); joined before the context
    /// is released.
    unmapper: Option<unmapper::Unmapper>,
    device: Device,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal as usize
    }

    /// The raw stream all work runs on, for interop (ordering other CUDA work with vramkit's).
    pub fn stream(&self) -> sys::CUstream {
        self.stream.0
    }

    /// Whether matmul runs on cuBLAS (loaded on first use; [`CudaConfig::vendor_blas`] turns it
    /// off).
    pub fn has_cublas(&self) -> bool {
        self.blas().is_some()
    }

    fn blas(&self) -> Option<&blas::Blas> {
        self.blas
            .get_or_init(|| {
                if !self.vendor_blas {
                    log::info!("vramkit: cuBLAS off (CudaConfig::vendor_blas); own matmul kernels");
                    return None;
                }
                self.device.bind().ok()?;
                blas::Blas::load(self.stream.0)
            })
            .as_ref()
    }

    /// A driver error as an [`Error`], marking the device lost on errors CUDA never recovers
    /// from.
    fn fail(&self, op: &'static str, e: DriverError) -> Error {
        if driver::is_sticky(e) {
            let reason = format!("{op}: {}", driver::describe(e));
            log::error!("vramkit: CUDA device lost ({reason})");
            let _ = self.lost.set(reason);
            return Error::DeviceLost {
                reason: self.lost.get().cloned().unwrap_or_default(),
            };
        }
        driver::error(op, e)
    }

    /// Records a driver error of a call that returns none, for the next call that can fail.
    fn record_err(&self, op: &'static str, e: DriverError) {
        let e = self.fail(op, e);
        self.deferred.record(e);
    }

    /// Binds the context and fails once the device is lost.
    fn enter(&self) -> Result<()> {
        self.check_device()?;
        self.device.bind()
    }
}

// SAFETY: see the promises of `Storage`: blocks hold what was asked, work runs in order.
unsafe impl Storage for CudaBackend {
    type Block = CudaBlock;
    type Texture = CudaTexture;

    fn device_info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn limits(&self) -> &BackendLimits {
        &self.limits
    }

    fn memory_info(&self) -> Option<MemoryInfo> {
        self.device.bind().ok()?;
        // Memory given back in the background counts as free once it is.
        self.drain_unmaps();
        let (free, total) = cu::mem_get_info().ok()?;
        Some(MemoryInfo {
            total: total as u64,
            free: free as u64,
        })
    }

    fn check_device(&self) -> Result<()> {
        match self.lost.get() {
            Some(reason) => Err(Error::DeviceLost {
                reason: reason.clone(),
            }),
            None => self.deferred.take(),
        }
    }

    fn supports(&self, kind: MemoryKind) -> Result<()> {
        if kind == MemoryKind::Unified && !self.managed {
            return Err(Error::Unsupported {
                what: "MemoryKind::Unified".into(),
                reason: format!("{} has no managed memory; use Device", self.info.name),
            });
        }
        Ok(())
    }

    fn alloc_block(&self, size: u64, kind: MemoryKind) -> Result<CudaBlock> {
        self.new_block(size, kind)
    }

    unsafe fn free_block(&self, block: CudaBlock) {
        // SAFETY: the caller guarantees no unfinished work uses the block.
        unsafe { self.drop_block(block) };
    }

    fn resizable(&self, kind: MemoryKind) -> bool {
        kind == MemoryKind::Device && self.vmm.is_some()
    }

    fn page_grid(&self, kind: MemoryKind) -> Option<PageGrid> {
        self.vmm
            .as_ref()
            .filter(|_| self.resizable(kind))
            .map(|v| v.grid)
    }

    unsafe fn unmap_pages(&self, block: &CudaBlock, offset: u64, size: u64) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.unmap_segment_pages(block, offset, size) }
    }

    unsafe fn map_pages(&self, block: &CudaBlock, offset: u64, size: u64) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.map_segment_pages(block, offset, size) }
    }

    fn moves_pages(&self) -> bool {
        self.vmm.is_some()
    }

    unsafe fn move_pages(
        &self,
        src: &CudaBlock,
        from: u64,
        dst: &CudaBlock,
        to: u64,
        size: u64,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.move_segment_pages(src, from, dst, to, size) }
    }

    fn defers_moves(&self) -> bool {
        self.vmm.is_some() && self.unmapper.is_some()
    }

    unsafe fn move_pages_after(
        &self,
        src: &CudaBlock,
        from: u64,
        dst: &CudaBlock,
        to: u64,
        size: u64,
        stream: ForeignStream,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.move_segment_pages_after(src, (from, dst, to), size, stream) }
    }

    fn grow_block(&self, block: &CudaBlock, new_size: u64) -> Result<()> {
        self.grow_segment(block, new_size)
    }

    fn grow_unmapped(&self, block: &CudaBlock, new_size: u64) -> Result<()> {
        self.grow_segment_unmapped(block, new_size)
    }

    unsafe fn shrink_block(&self, block: &CudaBlock, new_size: u64) -> Result<u64> {
        // SAFETY: the caller guarantees no unfinished work uses the end.
        unsafe { self.shrink_segment(block, new_size) }
    }

    unsafe fn write_host(&self, block: &CudaBlock, offset: u64, data: &[u8]) -> Result<()> {
        let dst = block.host_ptr(offset, data.len())?;
        self.host_access(block, offset, data.len())?;
        // SAFETY: `dst..dst + len` lies inside the host-visible block (checked), no device work
        // uses it (the caller waited; managed memory was synchronised), and `data` is a
        // separate Rust slice.
        unsafe { host_copy::to_raw(data, dst) };
        Ok(())
    }

    unsafe fn read_host(&self, block: &CudaBlock, offset: u64, out: &mut [u8]) -> Result<()> {
        let src = block.host_ptr(offset, out.len())?;
        self.host_access(block, offset, out.len())?;
        // SAFETY: as in `write_host`, reading.
        unsafe { host_copy::from_raw(src.cast_const(), out) };
        Ok(())
    }

    unsafe fn fill_host(
        &self,
        block: &CudaBlock,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(WriteOnly<'_>),
    ) -> Result<()> {
        let dst = block.host_ptr(offset, len)?;
        self.host_access(block, offset, len)?;
        // SAFETY: `dst..dst + len` lies inside the host-visible block (checked) and no device
        // work uses it (the caller's promise); the view lives only for the call. A write-only
        // view, not `&mut`: pinned memory may be write-combining, and no read is ever made.
        let chunk = unsafe { crate::types::host_bytes::write_only(dst, len) };
        f(chunk);
        Ok(())
    }

    unsafe fn view_host(
        &self,
        block: &CudaBlock,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let src = block.host_ptr(offset, len)?;
        self.host_access(block, offset, len)?;
        // SAFETY: as in `fill_host`; nothing writes the range during the call.
        f(unsafe { std::slice::from_raw_parts(src.cast_const(), len) });
        Ok(())
    }

    unsafe fn copy(
        &self,
        src: &CudaBlock,
        src_offset: u64,
        dst: &CudaBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<QueueIndex> {
        // SAFETY: both ranges lie inside live blocks (the memory manager checked them).
        unsafe { self.copy_runs([(src.ptr + src_offset, dst.ptr + dst_offset, size)].into_iter()) }
    }

    unsafe fn copy_to_peer(
        &self,
        src: &CudaBlock,
        src_offset: u64,
        peer: &Self,
        dst: &CudaBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<Option<(QueueIndex, QueueIndex)>> {
        // SAFETY: the caller's promises, passed on.
        unsafe { self.copy_peer(src, src_offset, peer, dst, dst_offset, size) }
    }

    fn alloc_texture(&self, desc: &TextureDesc) -> Result<(CudaTexture, Option<u64>)> {
        let bytes = CudaTexture::bytes(desc);
        let block = self.new_plain_block(bytes, MemoryKind::Texture)?;
        Ok((CudaTexture::new(block, desc), None))
    }

    unsafe fn free_texture(&self, texture: CudaTexture) {
        // SAFETY: as the caller guarantees, no unfinished work uses the texture's block.
        unsafe { self.drop_block(texture.block) }
    }

    unsafe fn copy_to_texture(
        &self,
        src: &CudaBlock,
        offset: u64,
        dst: &CudaTexture,
        copy: TextureCopy,
    ) -> Result<QueueIndex> {
        let runs = dst.runs(copy);
        // SAFETY: the caller keeps the rectangle inside the level and the rows inside `src`,
        // so every run lies inside both blocks.
        unsafe {
            self.copy_runs(
                runs.iter()
                    .map(|&(t, b, n)| (src.ptr + offset + b, dst.block.ptr + t, n)),
            )
        }
    }

    unsafe fn copy_from_texture(
        &self,
        src: &CudaTexture,
        copy: TextureCopy,
        dst: &CudaBlock,
        offset: u64,
    ) -> Result<QueueIndex> {
        let runs = src.runs(copy);
        // SAFETY: as in `copy_to_texture`, the other way.
        unsafe {
            self.copy_runs(
                runs.iter()
                    .map(|&(t, b, n)| (src.block.ptr + t, dst.ptr + offset + b, n)),
            )
        }
    }

    unsafe fn clear(&self, block: &CudaBlock, offset: u64, size: u64) -> Result<QueueIndex> {
        self.enter()?;
        // SAFETY: the range lies inside a live block.
        unsafe { cu::memset_d8_async(block.ptr + offset, 0, size as usize, self.stream.0) }
            .map_err(|e| self.fail("cuMemsetD8Async", e))?;
        Ok(lock(&self.subs).record())
    }

    unsafe fn advise(
        &self,
        block: &CudaBlock,
        offset: u64,
        size: u64,
        advice: MemoryAdvice,
    ) -> Result<()> {
        if block.kind != MemoryKind::Unified || !self.concurrent_managed {
            return Ok(());
        }
        self.enter()?;
        use sys::CUmem_advise as A;
        let (what, host) = match advice {
            MemoryAdvice::ReadMostly => (A::CU_MEM_ADVISE_SET_READ_MOSTLY, false),
            MemoryAdvice::UnsetReadMostly => (A::CU_MEM_ADVISE_UNSET_READ_MOSTLY, false),
            MemoryAdvice::PreferDevice => (A::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, false),
            MemoryAdvice::PreferHost => (A::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, true),
            MemoryAdvice::UnsetPreferredLocation => {
                (A::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, false)
            }
        };
        // SAFETY: the range lies inside a live managed block.
        unsafe { cu::mem_advise(block.ptr + offset, size as usize, what, self.location(host)) }
            .map_err(|e| self.fail("cuMemAdvise", e))
    }

    fn device_address(&self, block: &CudaBlock) -> Option<u64> {
        Some(block.device_ptr())
    }

    fn finish_unmaps(&self) {
        self.drain_unmaps();
    }

    fn foreign_streams(&self) -> bool {
        true
    }

    fn mark_stream(&self, stream: ForeignStream) -> Result<StreamMark> {
        self.record_mark(stream)
    }

    fn mark_done(&self, mark: StreamMark) -> Result<bool> {
        self.query_mark(mark)
    }

    fn wait_mark(&self, mark: StreamMark) -> Result<()> {
        self.sync_mark(mark)
    }

    fn forget_mark(&self, mark: StreamMark) {
        self.drop_mark(mark);
    }

    fn submit(&self) -> Result<QueueIndex> {
        self.enter()?;
        lock(&self.subs)
            .submit(self.stream.0)
            .map_err(|(op, e)| self.fail(op, e))
    }

    fn is_done(&self, index: QueueIndex) -> Result<bool> {
        self.enter()?;
        lock(&self.subs)
            .poll(index)
            .map_err(|(op, e)| self.fail(op, e))
    }

    fn wait(&self, index: QueueIndex) -> Result<()> {
        self.enter()?;
        let mut subs = lock(&self.subs);
        if index >= subs.open {
            subs.submit(self.stream.0)
                .map_err(|(op, e)| self.fail(op, e))?;
        }
        subs.wait(index).map_err(|(op, e)| self.fail(op, e))
    }
}
