//! Staging memory the caller owns: pinned host memory on CUDA, a mapped upload buffer on wgpu.
//! Filled once in place, it uploads at the DMA engine's speed as often as wanted, with no copy
//! on the host: for data sent again and again (weights, lookup tables, a frame to several
//! allocations). It counts in the budget as staging until freed.

use crate::backend::{Backend, Storage};
use crate::memory::manager::Access;
use crate::transfers::Transfers;
use crate::types::error::{Error, Result, StaleReason};
use crate::types::write_only::WriteOnly;
use crate::types::{MemoryKind, QueueIndex};
use crate::BufferHandle;

const WORD: u64 = 4;

/// Host memory the device copies from directly, owned by the caller: made by
/// [`Transfers::alloc_staging`](crate::transfers::Transfers::alloc_staging), filled by [`Transfers::fill_staging`](crate::transfers::Transfers::fill_staging), sent by
/// [`Transfers::upload_staging`](crate::transfers::Transfers::upload_staging), given back by [`Transfers::free_staging`](crate::transfers::Transfers::free_staging) (dropping it instead
/// leaks the memory until the context ends, and says so in the log).
#[must_use = "give it back with Transfers::free_staging"]
pub struct StagingBuffer<B: Storage> {
    block: Option<B::Block>,
    len: u64,
    size: u64,
    context: u32,
    /// The last copy that reads the buffer (0: none).
    in_flight: QueueIndex,
}

impl<B: Storage> StagingBuffer<B> {
    /// Its length in bytes.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let s = ctx.transfers().alloc_staging(10)?;
    /// assert_eq!(s.len(), 10);
    /// ctx.transfers().free_staging(s)?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no bytes (never: [`Transfers::alloc_staging`](crate::transfers::Transfers::alloc_staging) refuses 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<B: Storage> Drop for StagingBuffer<B> {
    fn drop(&mut self) {
        // Kept, not freed, on every backend: a copy may still read it, and the budget still
        // counts it (the manager's staging counter has no way back from here).
        if let Some(block) = self.block.take() {
            std::mem::forget(block);
            log::warn!(
                "vramkit: context {}: a staging buffer of {} bytes was dropped without \
                 free_staging; its memory stays held (and counted) until the context ends",
                self.context,
                self.len
            );
        }
    }
}

impl<B: Backend> Transfers<'_, B> {
    /// Makes `len` bytes of staging memory for the caller: pinned host memory on CUDA, a
    /// mapped upload buffer on wgpu. It counts in the budget (as staging).
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("table", 256))?;
    /// let mut s = ctx.transfers().alloc_staging(256)?;
    /// ctx.transfers().fill_staging(&mut s, |mut bytes| bytes.write_iter((0..=255u8).into_iter()))?;
    /// ctx.transfers().upload_staging(&mut s, h, 0)?;
    /// assert_eq!(ctx.download(h)?[255], 255);
    /// ctx.transfers().free_staging(s)?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ZeroSize`] for 0 bytes; [`Error::OverBudget`] or [`Error::OutOfMemory`] when
    /// there is no room.
    pub fn alloc_staging(&self, len: u64) -> Result<StagingBuffer<B>> {
        if len == 0 {
            return Err(Error::ZeroSize {
                label: "a staging buffer".into(),
            });
        }
        let max = self.ctx.backend.limits().max_block_size;
        // `len` ≤ `max` first, so rounding up cannot overflow.
        let size = if len <= max {
            len.next_multiple_of(WORD)
        } else {
            len
        };
        if size > max {
            return Err(Error::TooLarge {
                label: "a staging buffer".into(),
                requested: len,
                max,
                unit: "bytes",
                what: "the largest block the backend makes",
            });
        }
        let block =
            self.ctx
                .manager()
                .reserve_staging(&self.ctx.backend, size, MemoryKind::Upload)?;
        Ok(StagingBuffer {
            block: Some(block),
            len,
            size,
            context: self.ctx.id,
            in_flight: 0,
        })
    }

    /// Lets `fill` write the whole buffer in place (a write-only view, as in
    /// [`upload_with`](Self::upload_with)), after the device finished reading it.
    ///
    /// # Errors
    /// [`Error::StaleHandle`] for a buffer of another context; [`Error::DeviceLost`].
    pub fn fill_staging(
        &self,
        buf: &mut StagingBuffer<B>,
        fill: impl FnOnce(WriteOnly<'_>),
    ) -> Result<()> {
        let block = self.own(buf)?;
        if buf.in_flight != 0 {
            self.ctx.backend.wait(buf.in_flight)?;
        }
        let mut fill = Some(fill);
        // SAFETY: the block holds `size` ≥ `len` bytes; its last copy finished (waited above).
        unsafe {
            self.ctx
                .backend
                .fill_host(block, 0, buf.len as usize, &mut |view| {
                    if let Some(f) = fill.take() {
                        f(view);
                    }
                })
        }?;
        buf.in_flight = 0;
        Ok(())
    }

    /// Copies the whole buffer to byte `offset` of an allocation on the device (queued; later
    /// work and transfers see it). `offset` must be a multiple of 4, and the end too unless it
    /// is the allocation's end.
    ///
    /// # Errors
    /// [`Error::InvalidRange`] for a range outside the allocation or unaligned;
    /// [`Error::StaleHandle`] for a released handle or a buffer of another context.
    pub fn upload_staging(
        &self,
        buf: &mut StagingBuffer<B>,
        handle: BufferHandle,
        offset: u64,
    ) -> Result<()> {
        let block = self.own(buf)?;
        let limits = self.ctx.backend.limits();
        let index = {
            let mut m = self.ctx.manager();
            m.resolve(handle, offset, Some(buf.len), Access::Bytes, limits)?;
            let a = m.get(handle)?;
            let end = offset + buf.len;
            if !offset.is_multiple_of(WORD) || !(end.is_multiple_of(WORD) || end == a.requested) {
                return Err(Error::InvalidRange {
                    label: a.label.to_string(),
                    offset,
                    len: buf.len,
                    size: a.requested,
                    reason: "a staging buffer copies whole 4-byte words: start at a multiple \
                             of 4 and end at one or at the allocation's end (or use upload_at)",
                });
            }
            let r = m.resolve(handle, offset, Some(buf.size), Access::Words, limits)?;
            // SAFETY: the destination was resolved inside its block, word-aligned; the source
            // is the staging block's first `size` bytes; a staging buffer is its own block.
            let index = unsafe {
                self.ctx
                    .backend
                    .copy(block, 0, r.block, r.offset, buf.size)?
            };
            m.touch(handle, index);
            index
        };
        self.ctx.backend.submit()?;
        buf.in_flight = index;
        self.ctx
            .traced(crate::memory::EventKind::Upload, handle, buf.len);
        Ok(())
    }

    /// Gives a staging buffer back (after the device finished reading it).
    ///
    /// # Errors
    /// [`Error::StaleHandle`] for a buffer of another context (it is then dropped, leaked).
    pub fn free_staging(&self, mut buf: StagingBuffer<B>) -> Result<()> {
        self.own(&buf)?;
        if buf.in_flight != 0 {
            self.ctx.backend.wait(buf.in_flight)?;
        }
        if let Some(block) = buf.block.take() {
            self.ctx
                .manager()
                .unreserve_staging(buf.size, MemoryKind::Upload);
            // SAFETY: its last copy finished (waited above); nothing else uses the block.
            unsafe { self.ctx.backend.free_block(block) };
        }
        Ok(())
    }

    fn own<'b>(&self, buf: &'b StagingBuffer<B>) -> Result<&'b B::Block> {
        match &buf.block {
            Some(block) if buf.context == self.ctx.id => Ok(block),
            _ => Err(Error::StaleHandle {
                reason: StaleReason::ForeignContext,
            }),
        }
    }
}
