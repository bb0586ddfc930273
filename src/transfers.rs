//! The context's transfers beyond whole allocations ([`Context::transfers`]): at offsets,
//! typed, from readers, and closure-driven ones in which the caller fills (or reads) the
//! staging slots in place, chunk by chunk, with no copy between its memory and staging.

use std::cell::RefCell;
use std::ops::Range;

use bytemuck::Pod;

pub use crate::staging_buffer::StagingBuffer;
pub use crate::types::host_bytes::{copy_to_staging, host_zeroed};
pub use crate::types::write_only::WriteOnly;

use crate::backend::Backend;
use crate::memory::{BufferHandle, EventKind};
use crate::types::error::{Error, Result};
use crate::Context;

thread_local! {
    /// The contexts whose transfer closures this thread is running, outermost first (a
    /// closure of one context may run a transfer of another, whose closure may come back).
    static IN_CLOSURE: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Marks this thread as inside a transfer closure of context `id` until dropped (also on
/// unwind).
struct Inside;

impl Inside {
    fn enter(id: u32) -> Self {
        IN_CLOSURE.with(|c| c.borrow_mut().push(id));
        Self
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        IN_CLOSURE.with(|c| c.borrow_mut().pop());
    }
}

/// Refuses a transfer that a transfer closure of the same context started on this thread, at
/// any depth: it would wait for the staging ring the outer transfer holds. (Another thread the
/// closure waits for gets no such answer: it waits for the ring too; don't hand a context's
/// transfers to other threads from inside its closure.)
pub(crate) fn check_reentry(id: u32) -> Result<()> {
    if in_closure(id) {
        return Err(Error::Unsupported {
            what: "a transfer from inside an upload_with/download_with closure".into(),
            reason: "the outer transfer holds the staging ring; collect what to move and \
                     transfer it after the closure returns (or use another context)"
                .into(),
        });
    }
    Ok(())
}

/// Whether this thread runs a transfer closure of context `id` (at any depth).
pub(crate) fn in_closure(id: u32) -> bool {
    IN_CLOSURE.with(|c| c.borrow().contains(&id))
}

/// Transfers beyond the whole-allocation [`upload`](Context::upload) and
/// [`download`](Context::download): at an offset, into the caller's buffer, from a reader,
/// typed slices at an offset, closures that fill or read the staging slots in place, and
/// staging buffers of the caller's own. From [`Context::transfers`].
pub struct Transfers<'a, B: Backend> {
    pub(crate) ctx: &'a Context<B>,
}

impl<B: Backend> Context<B> {
    /// Transfers at an offset, into the caller's memory, from readers, through closures and
    /// staging buffers of the caller's own.
    pub fn transfers(&self) -> Transfers<'_, B> {
        Transfers { ctx: self }
    }
}

impl<B: Backend> Transfers<'_, B> {
    /// Writes `data` starting at element `first` of the allocation seen as `T`s, that is at
    /// byte `first × size_of::<T>()`. Elements outside the range are kept.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("x", 8 * 2))?;
    /// ctx.transfers().upload_slice_at(h, 5, &[7u16, 8, 9])?;
    /// assert_eq!(ctx.download_vec::<u16>(h)?, [0, 0, 0, 0, 0, 7, 8, 9]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if the range passes the allocation's end (also when its byte
    /// offset overflows); as [`upload_slice`](Context::upload_slice).
    pub fn upload_slice_at<T: Pod>(
        &self,
        handle: BufferHandle,
        first: u64,
        data: &[T],
    ) -> Result<()> {
        let offset = self.ctx.element_offset::<T>(handle, first, data.len())?;
        self.upload_at(handle, offset, bytemuck::cast_slice(data))
    }

    /// Reads `out.len()` elements starting at element `first` of the allocation seen as `T`s,
    /// that is at byte `first × size_of::<T>()`. Waits for the device.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("x", 4 * 4))?;
    /// ctx.upload_slice(h, &[10u32, 20, 30, 40])?;
    /// let mut two = [0u32; 2];
    /// ctx.transfers().download_into_slice(h, 1, &mut two)?;
    /// assert_eq!(two, [20, 30]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if the range passes the allocation's end (also when its byte
    /// offset overflows); [`Error::InvalidParameter`] for a zero-sized `T`;
    /// [`Error::StaleHandle`]; as [`download_into`](Self::download_into).
    pub fn download_into_slice<T: Pod>(
        &self,
        handle: BufferHandle,
        first: u64,
        out: &mut [T],
    ) -> Result<()> {
        let offset = self.ctx.element_offset::<T>(handle, first, out.len())?;
        self.download_into(handle, offset, bytemuck::cast_slice_mut(out))
    }

    /// Writes `data` at byte `offset` of an allocation. Bytes outside the range are kept.
    ///
    /// # Errors
    /// As [`upload`](Context::upload).
    pub fn upload_at(&self, handle: BufferHandle, offset: u64, data: &[u8]) -> Result<()> {
        self.ctx.transfer(|t| t.upload(handle, offset, data))?;
        self.ctx
            .traced(EventKind::Upload, handle, data.len() as u64);
        Ok(())
    }

    /// Streams `reader` (a file, a socket) into an allocation from its start, chunk by chunk,
    /// without holding the whole input in memory. Returns the bytes written.
    ///
    /// # Errors
    /// [`Error::Io`] if reading fails; [`Error::InvalidRange`] if the input is longer than the
    /// allocation.
    pub fn upload_from_reader(
        &self,
        handle: BufferHandle,
        mut reader: impl std::io::Read,
    ) -> Result<u64> {
        let n = self
            .ctx
            .transfer(|t| t.upload_from_reader(handle, &mut reader))?;
        self.ctx.traced(EventKind::Upload, handle, n);
        Ok(n)
    }

    /// Reads `out.len()` bytes at byte `offset` of an allocation. Waits for the device.
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if the range passes the allocation's end; [`Error::StaleHandle`].
    pub fn download_into(&self, handle: BufferHandle, offset: u64, out: &mut [u8]) -> Result<()> {
        self.ctx.transfer(|t| t.download(handle, offset, out))?;
        self.ctx
            .traced(EventKind::Download, handle, out.len() as u64);
        Ok(())
    }

    /// The most bytes the staging rings may hold (both directions): what a planner must leave
    /// free in the budget for transfers.
    pub fn staging_capacity(&self) -> u64 {
        self.ctx.staging_sizes.1
    }

    /// Writes `range` of an allocation with bytes `fill` produces in place, in the staging
    /// memory itself (pinned host memory on CUDA, a mapped buffer on wgpu): no copy between
    /// the caller's memory and staging. `fill(offset, chunk)` is called once per chunk, in
    /// order, with the chunk's offset from `range.start` and the chunk to fill (at most
    /// [`staging_chunk`](Self::staging_chunk) bytes); the device copies chunk `i` while
    /// `fill` writes chunk `i + 1`.
    ///
    /// The chunk is a [`WriteOnly`] view: mapped staging may be
    /// write-combining, where reads crawl, and its earlier contents are none of the filler's
    /// business. Write all of it: bytes left unwritten are unspecified (earlier staging
    /// contents, never memory outside staging). `copy_from_slice`, `write_iter`, `fill` and
    /// `split_at` are what it offers. Where the range's ends are not 4-byte aligned or the
    /// memory is host-visible, chunks go through a temporary instead, with the same calls.
    ///
    /// If `fill` panics, the panic propagates: earlier chunks were written, later bytes keep
    /// their old values, and the context stays usable (no staging leaks). Inside `fill`, this
    /// context's transfers return [`Error::Unsupported`] (the outer transfer holds the staging
    /// ring); everything else works: [`trim`](crate::Memory::trim) leaves the staging ring alone, and
    /// [`max_batch`](crate::Memory::max_batch) counts one staging slot as already taken.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("ramp", 1000))?;
    /// // The chunk is a write-only view (mapped memory may be write-combining).
    /// ctx.transfers().upload_with(h, 0..1000, |at, chunk| {
    ///     let n = chunk.len() as u64;
    ///     chunk.write_iter((at..at + n).map(|i| i as u8));
    /// })?;
    /// assert_eq!(ctx.download(h)?[999], (999 % 256) as u8);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if the range ends before it starts or passes the allocation's
    /// end; [`Error::StaleHandle`]; [`Error::Staging`] when the budget leaves no room for a
    /// staging slot; [`Error::Unsupported`] when called from inside another transfer's closure.
    pub fn upload_with(
        &self,
        handle: BufferHandle,
        range: Range<u64>,
        mut fill: impl FnMut(u64, WriteOnly<'_>),
    ) -> Result<()> {
        let len = range.end.saturating_sub(range.start);
        let id = self.ctx.id;
        self.ctx.transfer(|t| {
            t.upload_with(handle, range, &mut |at, chunk| {
                let _inside = Inside::enter(id);
                fill(at, chunk)
            })
        })?;
        self.ctx.traced(EventKind::Upload, handle, len);
        Ok(())
    }

    /// Reads `range` of an allocation, handing it to `read(offset, chunk)` chunk by chunk, in
    /// order, in place in the staging memory (no copy into a caller's buffer); `offset` is the
    /// chunk's offset from `range.start`. The device copies the next chunk while `read` looks
    /// at this one. Panics and nesting as in [`upload_with`](Self::upload_with); a panic
    /// leaves the allocation unchanged.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("data", 64))?;
    /// ctx.upload(h, &[3; 64])?;
    /// let mut sum = 0u64;
    /// ctx.transfers().download_with(h, 8..40, |_, chunk| sum += chunk.iter().map(|&b| b as u64).sum::<u64>())?;
    /// assert_eq!(sum, 3 * 32);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`upload_with`](Self::upload_with).
    pub fn download_with(
        &self,
        handle: BufferHandle,
        range: Range<u64>,
        mut read: impl FnMut(u64, &[u8]),
    ) -> Result<()> {
        let len = range.end.saturating_sub(range.start);
        let id = self.ctx.id;
        self.ctx.transfer(|t| {
            t.download_with(handle, range, &mut |at, chunk| {
                let _inside = Inside::enter(id);
                read(at, chunk)
            })
        })?;
        self.ctx.traced(EventKind::Download, handle, len);
        Ok(())
    }

    /// The most bytes one chunk of [`upload_with`](Self::upload_with) or
    /// [`download_with`](Self::download_with) holds: the staging slot size.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// assert_eq!(ctx.transfers().staging_chunk(), 4 << 20);
    /// ```
    pub fn staging_chunk(&self) -> u64 {
        self.ctx.staging_slot()
    }
}
