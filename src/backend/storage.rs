//! [`Storage`]: the half of the seam the memory manager is written over.

use super::{BackendLimits, DeviceInfo, ForeignStream, MemoryInfo, PageGrid, StreamMark};
use crate::types::error::{Error, Result};
use crate::types::texture::{TextureCopy, TextureDesc};
use crate::types::write_only::WriteOnly;
use crate::types::{MemoryAdvice, MemoryKind, QueueIndex};

/// Blocks of memory, host access, queue-ordered copies and clears, and submissions.
///
/// Recording methods ([`copy`](Storage::copy), [`clear`](Storage::clear), and
/// [`Compute::dispatch`](super::Compute::dispatch)) add work to the open submission and return
/// its index; the work runs after [`submit`](Storage::submit). Host access
/// ([`write_host`](Storage::write_host), [`read_host`](Storage::read_host)) is immediate.
/// Implementations are internally synchronised: every method takes `&self`.
///
/// Validation is the caller's: methods whose arguments must satisfy a precondition are
/// `unsafe fn` with a `# Safety` list, and the memory manager is the one caller that checks
/// them (see the [module docs](super)).
///
/// # Safety
/// The memory manager's soundness rests on these promises of an implementation:
/// 1. A block from [`alloc_block`](Storage::alloc_block) holds at least the bytes asked for,
///    reads as zeros, and overlaps no other live block; [`grow_block`](Storage::grow_block)
///    keeps a block's contents and address and adds zeroed bytes.
/// 2. All recorded work runs in recording order, as on one CUDA stream or one wgpu queue: the
///    manager relies on it to reuse released device memory at once and to move allocations
///    that pending work uses (the copy runs after that work).
/// 3. [`wait`](Storage::wait)`(i)` returns `Ok` and [`is_done`](Storage::is_done)`(i)` returns
///    `Ok(true)` only once every piece of work recorded with an index up to `i` has finished.
/// 4. Each method touches only the ranges it is given.
/// 5. [`mark_done`](Storage::mark_done) returns `Ok(true)`, and [`wait_mark`](Storage::wait_mark)
///    returns `Ok`, only once the work its stream held when the mark was recorded has finished;
///    [`device_address`](Storage::device_address) is the block's address for as long as the
///    block lives.
pub unsafe trait Storage: Send + Sync + 'static {
    /// A raw block of memory.
    type Block: Send + Sync + 'static;
    /// A raw texture.
    type Texture: Send + Sync + 'static;

    /// The device this backend runs on.
    fn device_info(&self) -> DeviceInfo;
    /// Allocation and binding limits.
    fn limits(&self) -> &BackendLimits;
    /// Total and free device memory, where the API tells.
    fn memory_info(&self) -> Option<MemoryInfo>;
    /// `Err(`[`Error::DeviceLost`]`)` once the device is gone; else the first error recorded
    /// since the last call where one could not be returned (in `Drop`, or in
    /// [`free_block`](Storage::free_block)), as cudarc's `check_err`; else `Ok`.
    fn check_device(&self) -> Result<()>;
    /// `Ok` if blocks of `kind` can be made, else [`Error::Unsupported`] with the reason.
    fn supports(&self, kind: MemoryKind) -> Result<()>;

    /// Makes a block of `size` bytes. New blocks read as zeros.
    fn alloc_block(&self, size: u64, kind: MemoryKind) -> Result<Self::Block>;

    /// Frees a block. An error the API reports is recorded and returned by the next
    /// [`check_device`](Storage::check_device).
    ///
    /// # Safety
    /// 1. Every submission that used `block` has finished ([`is_done`](Storage::is_done)).
    unsafe fn free_block(&self, block: Self::Block);

    /// The most copies a compaction pass of its own (not one that makes room for a request)
    /// may spend sliding one allocation down over a smaller gap (its size over the gap, rounded
    /// up; each copy lands on bytes already copied). Where a copy within a block is cheap (a
    /// `cuMemcpy`), many; where it is a kernel launch of its own (wgpu), few, or the launches
    /// cost more than the memory gathered saves.
    fn max_slide_pieces(&self) -> u64 {
        4096
    }

    /// Lets go of a block that code outside vramkit may still use when the context goes (a
    /// leased device pointer or binding outlives it). The default leaks the block, so that
    /// pointers into it stay valid; a backend whose blocks are reference-counted by the API
    /// (wgpu) drops its own reference, and the memory goes when the last outside user lets go.
    fn abandon_block(&self, block: Self::Block) {
        std::mem::forget(block);
    }

    /// Whether blocks of `kind` grow and shrink in place, keeping their contents and device
    /// address ([`grow_block`](Storage::grow_block), [`shrink_block`](Storage::shrink_block)).
    /// The memory manager then keeps one growing block (a segment) per pool, as
    /// PyTorch's expandable segments: free space anywhere in it can be gathered by compaction
    /// and joined with new memory at its end.
    fn resizable(&self, _kind: MemoryKind) -> bool {
        false
    }

    /// Grows a block made by [`alloc_block`](Storage::alloc_block) to `new_size` bytes in
    /// place; the new bytes read as zeros. Only where [`resizable`](Storage::resizable).
    fn grow_block(&self, _block: &Self::Block, _new_size: u64) -> Result<()> {
        Err(Error::Unsupported {
            what: "growing a block".into(),
            reason: "this backend's blocks have a fixed size".into(),
        })
    }

    /// Grows a block made by [`alloc_block`](Storage::alloc_block) to `new_size` bytes in
    /// place with no memory behind the new bytes: they are as pages given back
    /// ([`unmap_pages`](Storage::unmap_pages)), for [`map_pages`](Storage::map_pages) or
    /// [`move_pages`](Storage::move_pages) to fill, and no work is recorded. The memory manager
    /// grows a segment so where free pages elsewhere may move into the new range instead of
    /// going back while new memory is mapped. Only where [`moves_pages`](Storage::moves_pages).
    ///
    /// # Errors
    /// [`Error::Internal`], with nothing changed, where the block's end or `new_size` does not
    /// lie on the [page grid](Storage::page_grid)'s boundaries or memory is mapped past the
    /// block's end; [`Error::OutOfMemory`] past the address space the block can take.
    fn grow_unmapped(&self, _block: &Self::Block, _new_size: u64) -> Result<()> {
        Err(Error::Unsupported {
            what: "growing a block without memory".into(),
            reason: "this backend's blocks hold their memory whole".into(),
        })
    }

    /// Gives back the end of a block beyond `new_size` bytes, as far as the API's granularity
    /// allows, and returns the block's size afterwards (at least `new_size`). Only where
    /// [`resizable`](Storage::resizable).
    ///
    /// # Safety
    /// 1. No unfinished work uses the block's bytes past `new_size`, and nothing will until a
    ///    later [`grow_block`](Storage::grow_block) maps them again.
    unsafe fn shrink_block(&self, _block: &Self::Block, _new_size: u64) -> Result<u64> {
        Err(Error::Unsupported {
            what: "shrinking a block".into(),
            reason: "this backend's blocks have a fixed size".into(),
        })
    }

    /// Where the pages lie that [`unmap_pages`](Storage::unmap_pages) gives back inside a
    /// block of `kind` while keeping its addresses (CUDA virtual memory: pages of the mapping
    /// granularity, 2 MiB, growing with the offset); `None` (the default) where blocks cannot
    /// give back memory inside. A page is given back, mapped and moved whole, and moves to a
    /// place of its size or inside a larger page, which smaller ones then fill (the part of
    /// such a page that is mapped is whole smaller pages from its start).
    fn page_grid(&self, _kind: MemoryKind) -> Option<PageGrid> {
        None
    }

    /// Gives back the memory behind `offset .. offset + size` of a block, keeping the
    /// addresses: the block's size and the rest of its bytes stay; the range holds no memory
    /// until [`map_pages`](Storage::map_pages). Only where [`page_grid`](Storage::page_grid).
    ///
    /// # Safety
    /// 1. `offset .. offset + size` begins and ends on the [page grid](Storage::page_grid)'s
    ///    boundaries, or where smaller pages moved into a larger one end, and lies inside the
    ///    block, with memory behind all of it (mapped).
    /// 2. No unfinished work uses the range, and nothing will until it is mapped again.
    unsafe fn unmap_pages(&self, _block: &Self::Block, _offset: u64, _size: u64) -> Result<()> {
        Err(Error::Unsupported {
            what: "giving back pages inside a block".into(),
            reason: "this backend's blocks hold their memory whole".into(),
        })
    }

    /// Waits until the pages that [`unmap_pages`](Storage::unmap_pages) gave back, and those
    /// [`move_pages`](Storage::move_pages) left, are unmapped, where the backend unmaps them in
    /// the background (the CUDA backend's unmapping thread); a no-op elsewhere. The memory
    /// manager calls it when it reclaims memory under pressure and in a trim, so that the
    /// device has the memory before it is asked again, and other programs when a trim returns.
    fn finish_unmaps(&self) {}

    /// Puts memory back behind `offset .. offset + size` of a block whose pages were given back
    /// with [`unmap_pages`](Storage::unmap_pages); the new bytes hold anything.
    ///
    /// # Safety
    /// 1. `offset .. offset + size` begins and ends on the [page grid](Storage::page_grid)'s
    ///    boundaries, or on multiples of its smallest page inside a page that pages moved
    ///    into fill in part ([`move_pages`](Storage::move_pages)), and the whole range was
    ///    unmapped.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the device has no memory for it.
    unsafe fn map_pages(&self, _block: &Self::Block, _offset: u64, _size: u64) -> Result<()> {
        Err(Error::Unsupported {
            what: "mapping pages inside a block".into(),
            reason: "this backend's blocks hold their memory whole".into(),
        })
    }

    /// Whether [`move_pages`](Storage::move_pages) moves memory between places of blocks
    /// without giving it back.
    fn moves_pages(&self) -> bool {
        false
    }

    /// Moves the memory behind `from .. from + size` of `src` to `to .. to + size` of `dst`
    /// (the same block or another of the same kind), keeping both blocks' addresses: the
    /// source range then holds no memory, as after [`unmap_pages`](Storage::unmap_pages), and
    /// the destination holds what it held (its bytes hold anything). The memory held does not
    /// change. Only where [`moves_pages`](Storage::moves_pages).
    ///
    /// # Safety
    /// 1. The source is whole pages of its block ([`PageGrid`]) (or the mapped start of a
    ///    page that smaller pages moved into fill in part), all mapped; each of them
    ///    lands inside one page of the destination (a page of its size, or a larger one that
    ///    smaller pages fill, at a multiple of the smallest page); the destination is all
    ///    given back; the ranges do not overlap.
    /// 2. No unfinished work uses the source range, and nothing will until it is mapped again.
    ///
    /// # Errors
    /// [`Error::Internal`] where the ranges are not as promised: nothing changed. Else the
    /// driver's: the destination then stays given back and the source range holds no memory
    /// either (its pages were given back).
    unsafe fn move_pages(
        &self,
        _src: &Self::Block,
        _from: u64,
        _dst: &Self::Block,
        _to: u64,
        _size: u64,
    ) -> Result<()> {
        Err(Error::Unsupported {
            what: "moving pages between places of blocks".into(),
            reason: "this backend's blocks hold their memory whole".into(),
        })
    }

    /// Whether [`move_pages_after`](Storage::move_pages_after) moves pages that work on a
    /// foreign stream may still use without the host waiting for that work (the CUDA backend
    /// with its unmapping thread, and the host backend's model of it).
    fn defers_moves(&self) -> bool {
        false
    }

    /// [`move_pages`](Storage::move_pages) for a source range that work recorded on `stream`
    /// so far may still use: the destination holds the pages now, for work recorded on
    /// `stream` after this call (the stream's order keeps it after the old work), and the
    /// source's old mapping goes once that work is done. Where the backend does not
    /// [`defer moves`](Storage::defers_moves), the host waits for the stream first.
    ///
    /// # Safety
    /// 1. As [`move_pages`](Storage::move_pages)'s first promise.
    /// 2. No unfinished work uses the source range but work recorded on `stream` before this
    ///    call, and nothing but work recorded on `stream` after it uses the destination until
    ///    that work is done; nothing uses the source range until it is mapped again.
    ///
    /// # Errors
    /// As [`move_pages`](Storage::move_pages); a stream whose point cannot be recorded or
    /// waited for (a stream being captured into a CUDA graph, a lost context) is an
    /// [`Error::Internal`] with nothing changed.
    unsafe fn move_pages_after(
        &self,
        src: &Self::Block,
        from: u64,
        dst: &Self::Block,
        to: u64,
        size: u64,
        stream: ForeignStream,
    ) -> Result<()> {
        let mark = self.mark_stream(stream).map_err(|e| Error::Internal {
            message: format!("no mark on the stream before moving pages: {e}"),
        })?;
        let waited = self.wait_mark(mark);
        self.forget_mark(mark);
        waited.map_err(|e| Error::Internal {
            message: format!("no wait for the stream before moving pages: {e}"),
        })?;
        // SAFETY: the stream's work on the source is done (waited for above); the rest is the
        // caller's promise.
        unsafe { self.move_pages(src, from, dst, to, size) }
    }

    /// Writes `data` at `offset` of a host-visible block.
    ///
    /// # Safety
    /// 1. `offset + data.len()` is at most the block's size.
    /// 2. No unfinished work uses the range.
    unsafe fn write_host(&self, block: &Self::Block, offset: u64, data: &[u8]) -> Result<()>;

    /// Reads `out.len()` bytes at `offset` of a host-visible block.
    ///
    /// # Safety
    /// 1. `offset + out.len()` is at most the block's size.
    /// 2. No unfinished work writes the range.
    unsafe fn read_host(&self, block: &Self::Block, offset: u64, out: &mut [u8]) -> Result<()>;

    /// Lets `f` write `len` bytes at `offset` of a host-visible block in place (pinned memory on
    /// CUDA, the mapped buffer on wgpu), so a producer fills staging with no extra copy. The
    /// view is write-only ([`WriteOnly`]): mapped memory may be write-combining, where
    /// reads are very slow, and staging's old bytes are none of the producer's business. The
    /// default fills a zeroed temporary and [`write_host`](Storage::write_host)s it. If `f`
    /// panics, the panic propagates; the range then holds whatever `f` wrote.
    ///
    /// # Safety
    /// 1. `offset + len` is at most the block's size.
    /// 2. No unfinished work uses the range.
    unsafe fn fill_host(
        &self,
        block: &Self::Block,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(WriteOnly<'_>),
    ) -> Result<()> {
        let mut tmp = crate::types::host_bytes::host_buffer(len as u64, "a staging fill")?;
        f(WriteOnly::from_mut(&mut tmp[..]));
        // SAFETY: the caller's contract, passed on.
        unsafe { self.write_host(block, offset, &tmp) }
    }

    /// Lets `f` read `len` bytes at `offset` of a host-visible block in place. The default
    /// [`read_host`](Storage::read_host)s into a temporary.
    ///
    /// # Safety
    /// 1. `offset + len` is at most the block's size.
    /// 2. No unfinished work writes the range.
    unsafe fn view_host(
        &self,
        block: &Self::Block,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let mut tmp = crate::types::host_bytes::host_buffer(len as u64, "a staging read")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.read_host(block, offset, &mut tmp)? };
        f(&tmp);
        Ok(())
    }

    /// Records a copy of `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`.
    ///
    /// # Safety
    /// 1. Both ranges lie inside their blocks.
    /// 2. Within one block, the ranges do not overlap.
    /// 3. Offsets and `size` are multiples of [`BackendLimits::copy_alignment`]; within one
    ///    block, offsets are multiples of [`BackendLimits::offset_alignment`] too (the memory
    ///    manager's units are: a backend may copy within a block with a kernel binding both
    ///    ranges).
    unsafe fn copy(
        &self,
        src: &Self::Block,
        src_offset: u64,
        dst: &Self::Block,
        dst_offset: u64,
        size: u64,
    ) -> Result<QueueIndex>;

    /// Copies `size` bytes from `src` at `src_offset`, a block of this backend, to `dst` at
    /// `dst_offset`, a block of `peer`: another backend of this type (one backend copies
    /// with [`copy`](Storage::copy)), on this device or another, device to device. The copy runs after the work recorded so far on both and
    /// before work recorded later on either. Returns the submissions, of this backend and of
    /// `peer`, whose completion means the copy completed; `Ok(None)` when there is no direct
    /// path between the two (the default; the caller then copies through the host).
    ///
    /// # Safety
    /// 1. `src` is a block of `self` and `dst` a block of `peer`, both of
    ///    [`MemoryKind::Device`], and both ranges lie inside their blocks.
    /// 2. Offsets are multiples of [`BackendLimits::offset_alignment`] and `size` of
    ///    [`BackendLimits::copy_alignment`], on both backends.
    /// 3. `self` and `peer` are two backends, not one.
    /// 4. Both blocks stay alive until the returned submissions complete (the memory manager
    ///    records them as the allocations' last use).
    ///
    /// In return, an implementation orders work recorded later on either backend after the
    /// copy (the manager reuses released memory in recording order), and when it fails after
    /// issuing the copy, returns only once the copy has finished.
    unsafe fn copy_to_peer(
        &self,
        _src: &Self::Block,
        _src_offset: u64,
        _peer: &Self,
        _dst: &Self::Block,
        _dst_offset: u64,
        _size: u64,
    ) -> Result<Option<(QueueIndex, QueueIndex)>>
    where
        Self: Sized,
    {
        Ok(None)
    }

    /// Records a fill of `size` bytes at `offset` with zeros.
    ///
    /// # Safety
    /// 1. The range lies inside the block.
    /// 2. `offset` and `size` are multiples of [`BackendLimits::copy_alignment`].
    unsafe fn clear(&self, block: &Self::Block, offset: u64, size: u64) -> Result<QueueIndex>;

    /// Applies a [`MemoryAdvice`] to a range of a [`MemoryKind::Unified`] block. Backends whose
    /// unified memory does not migrate accept and ignore it (the default).
    ///
    /// # Safety
    /// 1. The range lies inside the block.
    unsafe fn advise(
        &self,
        _block: &Self::Block,
        _offset: u64,
        _size: u64,
        _advice: MemoryAdvice,
    ) -> Result<()> {
        Ok(())
    }

    /// Makes a texture as described (validated by the caller against
    /// [`BackendLimits::max_texture_side`]); its texels read as zeros. Returns it and the bytes
    /// the driver holds for it, where the API tells (Vulkan's image memory requirements).
    fn alloc_texture(&self, desc: &TextureDesc) -> Result<(Self::Texture, Option<u64>)>;

    /// Frees a texture. An error the API reports is recorded and returned by the next
    /// [`check_device`](Storage::check_device).
    ///
    /// # Safety
    /// 1. Every submission that used `texture` has finished ([`is_done`](Storage::is_done)).
    unsafe fn free_texture(&self, texture: Self::Texture);

    /// Records a copy of the rectangle `copy` from rows in `src` (the first at `offset`,
    /// `copy.bytes_per_row` apart) into the texture.
    ///
    /// # Safety
    /// 1. The rectangle lies inside mip level `copy.mip` of `dst`, which exists.
    /// 2. `offset + copy.buffer_bytes()` is at most the block's size, and `offset` is a
    ///    multiple of [`BackendLimits::copy_alignment`].
    /// 3. `copy.bytes_per_row` is a multiple of [`ROW_ALIGNMENT`](crate::types::texture::ROW_ALIGNMENT)
    ///    and at least the rectangle's width times the texel size.
    unsafe fn copy_to_texture(
        &self,
        src: &Self::Block,
        offset: u64,
        dst: &Self::Texture,
        copy: TextureCopy,
    ) -> Result<QueueIndex>;

    /// Records a copy of the rectangle `copy` of the texture into rows in `dst` (the first at
    /// `offset`, `copy.bytes_per_row` apart).
    ///
    /// # Safety
    /// As [`copy_to_texture`](Storage::copy_to_texture), with `src` the texture and `dst`
    /// the block.
    unsafe fn copy_from_texture(
        &self,
        src: &Self::Texture,
        copy: TextureCopy,
        dst: &Self::Block,
        offset: u64,
    ) -> Result<QueueIndex>;

    /// The device address of a block (a `CUdeviceptr`; a host address on the host backend),
    /// stable for the block's life, where the API has one that outside code can use. `None`
    /// (the default) where it has none (wgpu buffers) or where blocks may move (a host block
    /// that grows).
    fn device_address(&self, _block: &Self::Block) -> Option<u64> {
        None
    }

    /// Whether [`mark_stream`](Storage::mark_stream) works: memory can be used on streams
    /// this backend does not own.
    fn foreign_streams(&self) -> bool {
        false
    }

    /// Records a mark on a stream this backend does not own (a CUDA event).
    ///
    /// # Errors
    /// [`Error::Unsupported`] where there are no foreign streams (the default); the API's
    /// error for a stream it does not know.
    fn mark_stream(&self, stream: ForeignStream) -> Result<StreamMark> {
        Err(Error::Unsupported {
            what: format!("work on a stream of the caller's ({:#x})", stream.raw()),
            reason: "this backend runs all work on its own queue; use the CUDA backend".into(),
        })
    }

    /// Whether a mark is done (polls without blocking).
    ///
    /// # Errors
    /// The API's error (a lost device).
    fn mark_done(&self, _mark: StreamMark) -> Result<bool> {
        Ok(true)
    }

    /// Blocks until a mark is done.
    ///
    /// # Errors
    /// The API's error (a lost device).
    fn wait_mark(&self, _mark: StreamMark) -> Result<()> {
        Ok(())
    }

    /// Gives a mark back; it is not asked about again.
    fn forget_mark(&self, _mark: StreamMark) {}

    /// Submissions the device refused since the last call (each is reported once): each one's
    /// index and what was refused (the launches it held). Their work did not run; the manager
    /// marks the allocations they used as holding unknown data. Backends whose calls fail at
    /// once (the default) have none.
    fn refused_submissions(&self) -> Vec<(QueueIndex, String)> {
        Vec::new()
    }

    /// Submits recorded work, returning its index (the last index if nothing was recorded).
    fn submit(&self) -> Result<QueueIndex>;
    /// Whether the submission `index` has finished (polls without blocking).
    fn is_done(&self, index: QueueIndex) -> Result<bool>;
    /// Blocks until submission `index` has finished, submitting it first if it is still open.
    fn wait(&self, index: QueueIndex) -> Result<()>;
}
