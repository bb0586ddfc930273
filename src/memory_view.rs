//! The context's memory policy while it runs ([`Context::memory`]): its budget and release
//! threshold, how much more fits, memory given back on demand (`compact`, `trim`), and
//! advice for unified memory.

use crate::backend::Backend;
use crate::memory::manager::Access;
use crate::memory::CompactReport;
use crate::types::error::Error;
use crate::types::error::Result;
use crate::types::{MemoryAdvice, MemoryKind};
use crate::{BufferHandle, Context};

/// The context's memory policy while it runs: the budget and release threshold, how many
/// more items fit, memory given back on demand, advice for unified memory. From
/// [`Context::memory`].
pub struct Memory<'a, B: Backend> {
    ctx: &'a Context<B>,
}

impl<B: Backend> Context<B> {
    /// The context's memory policy while it runs: budget, release threshold, what fits,
    /// trim and compact, advice for unified memory.
    pub fn memory(&self) -> Memory<'_, B> {
        Memory { ctx: self }
    }
}

impl<B: Backend> Memory<'_, B> {
    /// How many more separate device allocations of `bytes_per_item` bytes fit now, within
    /// the budget (leaving room for the staging buffers a first upload and download need) and
    /// the free space of existing blocks. 0 when one item is larger than the largest block.
    /// [`max_items_in_one`](Self::max_items_in_one) answers how many fit in one allocation.
    ///
    /// # Errors
    /// [`Error::ZeroSize`] for 0.
    ///
    /// ```
    /// let desc = vramkit::ContextDesc { budget: Some(110 << 20), ..Default::default() };
    /// let ctx = vramkit::Context::host(desc);
    /// // Three 4K RGBA8 frames, and the two 4 MiB staging buffers their transfers need.
    /// assert_eq!(ctx.memory().max_batch(33_177_600)?, 3);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn max_batch(&self, bytes_per_item: u64) -> Result<u64> {
        let keep = self.ctx.staging_to_come()?;
        self.ctx
            .manager()
            .max_batch(&self.ctx.backend, bytes_per_item, MemoryKind::Device, keep)
    }

    /// How many items of `bytes_per_item` bytes one device allocation can hold if made now:
    /// the largest allocation that succeeds (within the budget, leaving room for first
    /// staging buffers as [`max_batch`](Self::max_batch) does, the free space of existing
    /// blocks and the largest block), divided by the item size.
    ///
    /// # Errors
    /// [`Error::ZeroSize`] for 0.
    ///
    /// ```
    /// let desc = vramkit::ContextDesc { budget: Some(100 << 20), ..Default::default() };
    /// let ctx = vramkit::Context::host(desc);
    /// let n = ctx.memory().max_items_in_one(1000)?;
    /// assert_eq!(n, (92 << 20) / 1000); // 8 MiB left for staging
    /// let batch = ctx.alloc(vramkit::AllocDesc::new("batch", n * 1000))?;
    /// ctx.upload(batch, &[1; 1000])?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn max_items_in_one(&self, bytes_per_item: u64) -> Result<u64> {
        if bytes_per_item == 0 {
            return Err(Error::ZeroSize {
                label: "max_items_in_one".into(),
            });
        }
        let keep = self.ctx.staging_to_come()?;
        let largest =
            self.ctx
                .manager()
                .largest_alloc(&self.ctx.backend, MemoryKind::Device, keep)?;
        Ok(largest / bytes_per_item)
    }

    /// Applies a [`MemoryAdvice`] to a [`MemoryKind::Unified`] allocation: on CUDA,
    /// `cuMemAdvise` over its pages (advice is per page, so allocations that share a page share
    /// it); elsewhere unified memory does not migrate and advice is accepted and ignored.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an allocation of another kind; [`Error::StaleHandle`].
    pub fn advise(&self, handle: BufferHandle, advice: MemoryAdvice) -> Result<()> {
        let m = self.ctx.manager();
        let r = m.resolve(handle, 0, None, Access::Advise, self.ctx.backend.limits())?;
        // SAFETY: `resolve` placed the range inside its block.
        unsafe { self.ctx.backend.advise(r.block, r.offset, r.size, advice) }
    }

    /// Sets the budget ([`ContextDesc::budget`](crate::ContextDesc::budget); `None`: no limit
    /// but the device's). Under a lower budget, cached free memory goes back to the device at
    /// once; live allocations stay, and requests are refused until enough is released.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// ctx.memory().set_budget(Some(64 << 20))?;
    /// assert_eq!(ctx.stats().budget, Some(64 << 20));
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// The backend's error while giving memory back (a lost device).
    pub fn set_budget(&self, budget: Option<u64>) -> Result<()> {
        self.ctx.manager().set_budget(&self.ctx.backend, budget)
    }

    /// Sets the bytes of free memory kept cached
    /// ([`ContextDesc::release_threshold`](crate::ContextDesc::release_threshold)); what is
    /// cached past it goes back once the work that used it has completed.
    ///
    /// # Errors
    /// As [`set_budget`](Self::set_budget).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        self.ctx
            .manager()
            .set_release_threshold(&self.ctx.backend, bytes)
    }

    /// Moves live allocations out of the sparsest blocks into free ranges of others, at most
    /// `max_bytes` of them, and gives the emptied blocks back to the device once the copies
    /// have run. Handles stay valid; allocations made with
    /// [`AllocDesc::immovable`](crate::AllocDesc::immovable) and released ones that pending
    /// work still uses stay put. Work recorded before or after runs in order with the copies.
    ///
    /// # Errors
    /// [`Error::DeviceLost`]; [`Error::Backend`] if the device refused a copy.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let a: Vec<_> = (0..4).map(|_| ctx.alloc(vramkit::AllocDesc::new("a", 16 << 20)).unwrap()).collect();
    /// let c = ctx.alloc(vramkit::AllocDesc::new("c", 16 << 20))?;
    /// ctx.upload(c, &[7; 64])?;
    /// for h in a { ctx.release(h)?; }
    /// let before = ctx.stats().reserved;
    /// let report = ctx.memory().compact(u64::MAX)?;   // `c` moves down to where the first `a` was
    /// assert_eq!(report.bytes_moved, 16 << 20);
    /// assert!(ctx.stats().reserved < before); // and the free end goes back
    /// assert_eq!(ctx.download(c)?[..64], [7; 64]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn compact(&self, max_bytes: u64) -> Result<CompactReport> {
        self.ctx.manager().compact(&self.ctx.backend, max_bytes)
    }

    /// Waits for pending releases, compacts every pool as far as it goes, then frees empty
    /// blocks and idle staging buffers (not from inside a transfer closure, whose transfer
    /// holds them). Returns the bytes given back to the device.
    ///
    /// # Errors
    /// [`Error::DeviceLost`].
    pub fn trim(&self) -> Result<u64> {
        if crate::transfers::in_closure(self.ctx.id) {
            // The outer transfer holds the staging rings: trim everything else.
            return self.ctx.manager().trim(&self.ctx.backend);
        }
        let mut staging = self.ctx.lock_staging()?;
        let mut mem = self.ctx.manager();
        let mut freed = staging.upload.clear(&self.ctx.backend, &mut mem)?;
        freed += staging.readback.clear(&self.ctx.backend, &mut mem)?;
        Ok(freed + mem.trim(&self.ctx.backend)?)
    }
}
