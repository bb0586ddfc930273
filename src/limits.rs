//! A running context's budget and release threshold, and memory given back on demand
//! (`compact`, `trim`).

use crate::backend::Backend;
use crate::types::error::Result;
use crate::{lock, CompactReport, Context};

impl<B: Backend> Context<B> {
    /// Sets the budget ([`ContextDesc::budget`](crate::ContextDesc::budget); `None`: no limit
    /// but the device's). Under a lower budget, cached free memory goes back to the device at
    /// once; live allocations stay, and requests are refused until enough is released.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// ctx.set_budget(Some(64 << 20))?;
    /// assert_eq!(ctx.stats().budget, Some(64 << 20));
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// The backend's error while giving memory back (a lost device).
    pub fn set_budget(&self, budget: Option<u64>) -> Result<()> {
        lock(&self.mem).set_budget(&self.backend, budget)
    }

    /// Sets the bytes of free memory kept cached
    /// ([`ContextDesc::release_threshold`](crate::ContextDesc::release_threshold)); what is
    /// cached past it goes back once the work that used it has completed.
    ///
    /// # Errors
    /// As [`set_budget`](Self::set_budget).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        lock(&self.mem).set_release_threshold(&self.backend, bytes)
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
    /// let report = ctx.compact(u64::MAX)?;   // `c` moves down to where the first `a` was
    /// assert_eq!(report.bytes_moved, 16 << 20);
    /// assert!(ctx.stats().reserved < before); // and the free end goes back
    /// assert_eq!(ctx.download(c)?[..64], [7; 64]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn compact(&self, max_bytes: u64) -> Result<CompactReport> {
        lock(&self.mem).compact(&self.backend, max_bytes)
    }

    /// Waits for pending releases, compacts every pool as far as it goes, then frees empty
    /// blocks and idle staging buffers (not from inside a transfer closure, whose transfer
    /// holds them). Returns the bytes given back to the device.
    ///
    /// # Errors
    /// [`Error::DeviceLost`].
    pub fn trim(&self) -> Result<u64> {
        if crate::transfers::in_closure(self.id) {
            // The outer transfer holds the staging rings: trim everything else.
            return lock(&self.mem).trim(&self.backend);
        }
        let mut staging = self.lock_staging()?;
        let mut mem = lock(&self.mem);
        let mut freed = staging.upload.clear(&self.backend, &mut mem)?;
        freed += staging.readback.clear(&self.backend, &mut mem)?;
        Ok(freed + mem.trim(&self.backend)?)
    }
}
