//! A running context's budget and release threshold.

use crate::backend::Backend;
use crate::error::Result;
use crate::{lock, Context};

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
}
