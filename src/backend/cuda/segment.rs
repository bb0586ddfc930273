//! Growable device blocks (segments) from CUDA's virtual memory management, as PyTorch's
//! expandable segments: a segment reserves address space for the whole device once
//! (`cuMemAddressReserve`), grows by mapping new physical memory at its end (`cuMemCreate`,
//! `cuMemMap`, `cuMemSetAccess`) and shrinks by unmapping and releasing pieces from its end. Its address never changes, so allocations in it keep theirs while it grows, and the
//! memory manager keeps one segment per pool (see [`Backend::resizable`](crate::Backend)).
//!
//! Measured on an H200 (`benches/reference/vmm_probe.py`): `cuMemAlloc` + `cuMemFree` of a
//! block cost 56–353 µs; a piece of a segment costs a `cuMemCreate` (~8 µs) and a `cuMemMap`
//! (~1 µs), and a growth one `cuMemSetAccess` (~33 µs), whatever the size, at a granularity of
//! 2 MiB. Every piece is one page of the segment's [`PageGrid`], or a smaller page moved into a
//! larger one (from
//! [`CudaConfig::page_size`](super::CudaConfig::page_size), by default the granularity, growing
//! with the offset), so that the memory manager can give
//! back any free page inside a segment ([`Storage::unmap_pages`]) and map it again later, as
//! physical memory follows what is in use while no allocation moves. A shrink gives back the
//! pages past the new end; the page holding it stays mapped (at most a page more than the
//! manager counts, as `cuMemAlloc` rounds inside its own pages).
//!
//! [`Storage::unmap_pages`]: crate::backend::Storage::unmap_pages

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use cudarc::driver::result as cu;
use cudarc::driver::sys;

use super::unmap::release_all;
use super::{CudaBackend, CudaBlock, CudaConfig};
use crate::backend::PageGrid;
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::MemoryKind;

/// What virtual memory management needs, probed once per device.
#[derive(Debug)]
pub(super) struct Vmm {
    /// The pages: each one piece (or smaller pages moved into it), mapped, given back and moved
    /// whole, a multiple of the
    /// device's granularity (2 MiB on current GPUs), from
    /// [`CudaConfig::page_size`](super::CudaConfig::page_size) and
    /// [`CudaConfig::page_growth`](super::CudaConfig::page_growth).
    pub(super) grid: PageGrid,
    /// Address space each segment reserves: twice the device's memory (address space is
    /// plentiful; the device runs out of memory first, with the driver's own error).
    reserve: u64,
}

/// One piece: a `cuMemCreate` allocation mapped at `offset` of a segment.
#[derive(Debug)]
pub(super) struct Mapping {
    pub(super) handle: sys::CUmemGenericAllocationHandle,
    pub(super) offset: u64,
    pub(super) size: u64,
}

/// The physical side of a segment: its mappings by offset (one page each, or the smaller
/// pages moved into one; pages given back inside are missing), and the other devices that may access it (peers, `peer.rs`), whose
/// access every later mapping gets too.
#[derive(Debug)]
pub(super) struct Segment {
    reserved: u64,
    pub(super) mappings: Mutex<BTreeMap<u64, Mapping>>,
    /// Locked after `mappings`.
    pub(super) peers: Mutex<Vec<sys::CUdevice>>,
}

impl Segment {
    /// The error of a growth by `requested` bytes past the address space reserved.
    fn past_reservation(&self, requested: u64) -> Error {
        Error::OutOfMemory {
            requested,
            kind: MemoryKind::Device,
            detail: format!(
                "out of memory: a segment cannot grow past the {} bytes of address space it \
                 reserved",
                self.reserved
            ),
        }
    }

    /// Where the mapped range ends.
    fn mapped(mappings: &BTreeMap<u64, Mapping>) -> u64 {
        mappings
            .last_key_value()
            .map_or(0, |(_, m)| m.offset + m.size)
    }

    /// The mapped runs: ranges of consecutive mappings.
    fn runs(mappings: &BTreeMap<u64, Mapping>) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for m in mappings.values() {
            match runs.last_mut() {
                Some(r) if r.1 == m.offset => r.1 = m.offset + m.size,
                _ => runs.push((m.offset, m.offset + m.size)),
            }
        }
        runs
    }
}

impl CudaBackend {
    /// Probes virtual memory management on the current device: `None` where it is missing.
    pub(super) fn probe_vmm(dev: sys::CUdevice, total: u64, config: &CudaConfig) -> Option<Vmm> {
        let prop = allocation_prop(dev);
        let mut granularity = 0usize;
        // SAFETY: `prop` is a valid property struct and `granularity` a valid out pointer.
        let r = unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        };
        let granularity = granularity as u64;
        if r.result().is_err() || granularity == 0 {
            return None;
        }
        // `page_size` is at most `MAX_PAGE_SIZE` (checked on opening): the rounding cannot
        // wrap. 0 is the granularity.
        let page = config
            .page_size
            .next_multiple_of(granularity)
            .max(granularity);
        // Every page of a growing grid is a power-of-two multiple of the first: a multiple of
        // the granularity too.
        let grid = if config.page_growth {
            PageGrid::growing(page)
        } else {
            PageGrid::fixed(page)
        };
        Some(Vmm {
            grid,
            reserve: grid.ceil(total.saturating_mul(2)),
        })
    }

    /// A new segment of `size` bytes (zeroed), reserving address space for the whole device.
    pub(super) fn new_segment(&self, size: u64) -> Result<CudaBlock> {
        let vmm = self.vmm.as_ref().ok_or_else(|| Error::Unsupported {
            what: "growable device blocks".into(),
            reason: "the device lacks virtual memory management".into(),
        })?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: reserves address space only; `ptr` is a valid out pointer.
        unsafe { sys::cuMemAddressReserve(&mut ptr, vmm.reserve as usize, 0, 0, 0) }
            .result()
            .map_err(|e| self.refused("cuMemAddressReserve", e, size, MemoryKind::Device))?;
        let block = CudaBlock {
            ptr,
            size: AtomicU64::new(0),
            kind: MemoryKind::Device,
            on_device: AtomicBool::new(false),
            segment: Some(Segment {
                reserved: vmm.reserve,
                mappings: Mutex::new(BTreeMap::new()),
                peers: Mutex::new(Vec::new()),
            }),
        };
        if let Err(e) = self.grow_segment(&block, size) {
            // SAFETY: the segment is new: no work has used it.
            unsafe { self.drop_block(block) };
            return Err(e);
        }
        Ok(block)
    }

    /// Grows a segment to `new_size` bytes; the new bytes read as zeros.
    pub(super) fn grow_segment(&self, block: &CudaBlock, new_size: u64) -> Result<()> {
        let (Some(vmm), Some(seg)) = (&self.vmm, &block.segment) else {
            return Err(Error::Unsupported {
                what: "growing a block".into(),
                reason: "it is not a segment".into(),
            });
        };
        self.enter()?;
        let old = block.size();
        if new_size <= old {
            return Ok(());
        }
        let mut mappings = lock(&seg.mappings);
        // Pages given back inside stay so: growth maps from the end of the block's pages.
        let mapped = Segment::mapped(&mappings).max(vmm.grid.ceil(old));
        // `reserved` is a page boundary: checked first, the rounding cannot pass it.
        let target = if new_size > seg.reserved {
            u64::MAX
        } else {
            vmm.grid.ceil(new_size)
        };
        if target > seg.reserved {
            return Err(seg.past_reservation(new_size - old));
        }
        if target > mapped {
            let peers = lock(&seg.peers).clone();
            let made = self.map_range(block.ptr, mapped, target, vmm, &peers)?;
            mappings.extend(made.into_iter().map(|m| (m.offset, m)));
        }
        drop(mappings);
        // SAFETY: `old..new_size` lies in the mapped range, which nothing uses yet.
        unsafe {
            cu::memset_d8_async(block.ptr + old, 0, (new_size - old) as usize, self.stream.0)
        }
        .map_err(|e| self.fail("cuMemsetD8Async", e))?;
        lock(&self.subs).recorded = true;
        block.size.store(new_size, Ordering::Release);
        Ok(())
    }

    /// Maps new physical memory over `ptr + from .. ptr + to` (page boundaries, or where
    /// smaller pages moved into a larger one end), read-write for this device and `peers`, one
    /// page (or the rest of one) a piece (a `cuMemCreate` each) and one
    /// `cuMemSetAccess`. Nothing is left mapped on failure.
    pub(super) fn map_range(
        &self,
        ptr: sys::CUdeviceptr,
        from: u64,
        to: u64,
        vmm: &Vmm,
        peers: &[sys::CUdevice],
    ) -> Result<Vec<Mapping>> {
        // Ranges given back there may still wait for the unmapping thread.
        self.before_map(ptr + from..ptr + to);
        let mut made = Vec::new();
        let mut result = Ok(());
        for page in vmm.grid.pages(from..to) {
            match self.map_piece(ptr, page.start, page.end - page.start) {
                Ok(m) => made.push(m),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self.set_access(ptr + from, to - from, peers);
        }
        if let Err(e) = result {
            // SAFETY: these pieces were mapped just now and are in no list: no work has used
            // them, and each is released once.
            if let Err(e) = unsafe { release_all(ptr, &made) } {
                self.record_err("cuMemUnmap", e);
            }
            return Err(e);
        }
        Ok(made)
    }

    /// Grows a segment to `new_size` bytes of address with nothing mapped behind the new
    /// bytes ([`Storage::grow_unmapped`](crate::backend::Storage::grow_unmapped)): no driver
    /// call.
    pub(super) fn grow_segment_unmapped(&self, block: &CudaBlock, new_size: u64) -> Result<()> {
        let (Some(vmm), Some(seg)) = (&self.vmm, &block.segment) else {
            return Err(not_a_segment());
        };
        let old = block.size();
        if new_size <= old {
            return Ok(());
        }
        let mappings = lock(&seg.mappings);
        if !vmm.grid.is_boundary(old)
            || !vmm.grid.is_boundary(new_size)
            || Segment::mapped(&mappings) > old
        {
            return Err(Error::Internal {
                message: format!(
                    "growing a segment from {old} to {new_size} bytes without memory: off the \
                     page grid, or pages mapped past its end"
                ),
            });
        }
        if new_size > seg.reserved {
            return Err(seg.past_reservation(new_size - old));
        }
        block.size.store(new_size, Ordering::Release);
        Ok(())
    }

    /// Makes `ptr .. ptr + size`, whole mappings, readable and writable by this device and
    /// `peers`.
    pub(super) fn set_access(
        &self,
        ptr: sys::CUdeviceptr,
        size: u64,
        peers: &[sys::CUdevice],
    ) -> Result<()> {
        let access: Vec<sys::CUmemAccessDesc> = std::iter::once(self.device.dev)
            .chain(peers.iter().copied())
            .map(|id| sys::CUmemAccessDesc {
                location: sys::CUmemLocation {
                    type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id,
                },
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            })
            .collect();
        // SAFETY: the caller passes whole mapped ranges; `access` holds `access.len()` valid
        // descriptors of devices.
        unsafe { sys::cuMemSetAccess(ptr, size as usize, access.as_ptr(), access.len()) }
            .result()
            .map_err(|e| self.refused("cuMemSetAccess", e, size, MemoryKind::Device))
    }

    /// Lets device `peer` access all of a segment, now and after it grows (a no-op for a block
    /// that is no segment: `cuMemAlloc` memory follows the contexts' peer access).
    pub(super) fn share_segment(&self, block: &CudaBlock, peer: sys::CUdevice) -> Result<()> {
        let Some(seg) = &block.segment else {
            return Ok(());
        };
        if peer == self.device.dev {
            return Ok(());
        }
        self.enter()?;
        let mappings = lock(&seg.mappings);
        let mut peers = lock(&seg.peers);
        if peers.contains(&peer) {
            return Ok(());
        }
        peers.push(peer);
        for (start, end) in Segment::runs(&mappings) {
            if let Err(e) = self.set_access(block.ptr + start, end - start, &peers) {
                peers.pop();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Creates `size` bytes of physical memory and maps them at `ptr + offset`.
    fn map_piece(&self, ptr: sys::CUdeviceptr, offset: u64, size: u64) -> Result<Mapping> {
        let prop = allocation_prop(self.device.dev);
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: `prop` is valid and `handle` a valid out pointer.
        let mut made = unsafe { sys::cuMemCreate(&mut handle, size as usize, &prop, 0) }.result();
        if made.is_err_and(|e| e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)
            && self.unmapper.is_some()
        {
            // Memory given back in the background is not free yet: once it is, once more.
            self.drain_unmaps();
            // SAFETY: as above.
            made = unsafe { sys::cuMemCreate(&mut handle, size as usize, &prop, 0) }.result();
        }
        made.map_err(|e| self.refused("cuMemCreate", e, size, MemoryKind::Device))?;
        // SAFETY: `ptr + offset .. + size` lies in this segment's reservation and is unmapped
        // (pieces are mapped at the mapped end); `handle` holds `size` bytes.
        if let Err(e) = unsafe { sys::cuMemMap(ptr + offset, size as usize, 0, handle, 0) }.result()
        {
            // SAFETY: `handle` came from cuMemCreate, was not mapped, and is released once.
            if let Err(e) = unsafe { sys::cuMemRelease(handle) }.result() {
                self.record_err("cuMemRelease", e);
            }
            return Err(self.refused("cuMemMap", e, size, MemoryKind::Device));
        }
        Ok(Mapping {
            handle,
            offset,
            size,
        })
    }

    /// Gives back the pieces that lie wholly past the page holding `new_size` and returns
    /// `new_size`: that page stays mapped whole (every piece of it), its end unused until the segment grows again (as
    /// `cuMemAlloc` rounds inside its own pages), so what the memory manager counts, and its
    /// budget, follow the sizes it asked for; the device holds at most one piece more.
    ///
    /// # Safety
    /// 1. No unfinished work uses the bytes past `new_size`.
    pub(super) unsafe fn shrink_segment(&self, block: &CudaBlock, new_size: u64) -> Result<u64> {
        let old = block.size();
        let Some(seg) = &block.segment else {
            return Ok(old);
        };
        if new_size >= old {
            return Ok(old);
        }
        self.enter()?;
        let mut mappings = lock(&seg.mappings);
        // The page holding the new end stays mapped whole, all its pieces (smaller pages
        // moved into it), so that a later growth finds every page below its start mapped.
        let cut = self
            .vmm
            .as_ref()
            .map_or(new_size, |v| v.grid.ceil(new_size));
        let past = mappings.split_off(&cut);
        if !past.is_empty() {
            if let Err(e) = self.sync_before_unmap() {
                mappings.extend(past);
                return Err(e);
            }
            let past: Vec<Mapping> = past.into_values().collect();
            // SAFETY: the mappings lie past `new_size`, which nothing uses (the caller's
            // promise), the stream is idle, and they left the list: each is released once.
            if let Err(e) = unsafe { release_all(block.ptr, &past) } {
                self.record_err("cuMemUnmap", e);
            }
        }
        block.size.store(new_size, Ordering::Release);
        Ok(new_size)
    }

    /// Unmaps and releases a segment's memory and its address range. Failures are recorded
    /// for the next call that can fail.
    ///
    /// # Safety
    /// 1. No unfinished work uses the segment, and it is dropped once.
    pub(super) unsafe fn drop_segment(&self, ptr: sys::CUdeviceptr, seg: &Segment) {
        // Ranges of the segment queued for the unmapping thread go before its addresses do.
        self.drain_unmaps();
        let mappings = std::mem::take(&mut *lock(&seg.mappings));
        if let Err(e) = self.sync_before_unmap() {
            // The stream failed: the context is lost, and its memory with it. Unmapping now
            // could pull memory from under work that did not finish.
            self.deferred.record(e);
            return;
        }
        let mappings: Vec<Mapping> = mappings.into_values().collect();
        // SAFETY: as the caller guarantees; the stream is idle; the list was taken, so each is
        // released once.
        if let Err(e) = unsafe { release_all(ptr, &mappings) } {
            self.record_err("cuMemUnmap", e);
        }
        // SAFETY: the range was reserved by `new_segment` with this size and is freed once,
        // after every mapping in it is gone.
        if let Err(e) = unsafe { sys::cuMemAddressFree(ptr, seg.reserved as usize) }.result() {
            self.record_err("cuMemAddressFree", e);
        }
    }

    /// Waits for everything on the stream: unmapping is not ordered with the stream, and the
    /// clear of a growth is marked by no submission the memory manager waits for. Shrinks and
    /// drops of segments are rare (pressure, trim, a finite release threshold).
    pub(super) fn sync_before_unmap(&self) -> Result<()> {
        // SAFETY: the stream is alive.
        unsafe { cu::stream::synchronize(self.stream.0) }
            .map_err(|e| self.fail("cuStreamSynchronize", e))
    }

    /// Lets work recorded but not yet marked by an event (a new block's clear) finish, before
    /// memory it may touch is given back.
    pub(super) fn settle(&self) {
        if lock(&self.subs).recorded {
            // SAFETY: the stream is alive.
            if let Err(e) = unsafe { cu::stream::synchronize(self.stream.0) } {
                self.record_err("cuStreamSynchronize", e);
            }
        }
    }
}

pub(super) fn not_a_segment() -> Error {
    Error::Unsupported {
        what: "pages inside a block".into(),
        reason: "it is not a segment".into(),
    }
}

/// Physical device memory on `dev`, with no export handles.
fn allocation_prop(dev: sys::CUdevice) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev,
        },
        win32HandleMetaData: std::ptr::null_mut(),
        allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
            reserved: [0; 4],
        },
    }
}
