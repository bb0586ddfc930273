//! Changing the budget and the release threshold of a running manager.

use super::Manager;
use crate::backend::Storage;
use crate::types::error::Result;
use crate::types::MemoryKind;

impl<B: Storage> Manager<B> {
    /// Sets the budget (`None`: none). Past a lower budget, cached free memory goes back at
    /// once; live allocations stay, and requests are refused until enough is released.
    pub fn set_budget(&mut self, backend: &B, budget: Option<u64>) -> Result<()> {
        self.budget.limit = budget.unwrap_or(u64::MAX);
        self.settings.budget = budget;
        if self.counters.reserved > self.budget.limit {
            self.reclaim(backend)?;
        }
        Ok(())
    }

    /// Sets the bytes of free memory kept cached; what is cached past it goes back at once.
    pub fn set_release_threshold(&mut self, backend: &B, bytes: u64) -> Result<()> {
        self.settings.release_threshold = bytes;
        for kind in MemoryKind::ALL {
            self.release_empty(backend, kind, bytes, false);
            if bytes != u64::MAX {
                self.shrink_segments(backend, kind, bytes)?;
            }
        }
        Ok(())
    }
}
