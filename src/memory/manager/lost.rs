//! Work the device refused after vramkit recorded it. wgpu reports some refusals only when a
//! command buffer is submitted, and then none of its work runs: the allocations it used hold
//! what they held before, which is not what the program recorded. The manager marks them, and
//! a download of a marked allocation fails (never returns stale data) until the allocation is
//! written again: uploaded whole, or bound writable in a later launch.

use std::sync::Arc;

use super::Manager;
use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::BufferHandle;

impl<B: Storage> Manager<B> {
    /// Marks the allocations that refused submissions since the last call used: those whose
    /// last use is the refused submission or later (work recorded after the refusal was
    /// learned cannot be among them: the backend records a refusal before it records more).
    pub fn note_refusals(&mut self, backend: &B) {
        let refused = backend.refused_submissions(self.refusals_seen);
        self.refusals_seen += refused.len();
        for (n, message) in refused {
            let message: Arc<str> = message.into();
            for (_, a) in self.allocs.iter_mut() {
                if a.last_use >= n {
                    a.lost = Some(Arc::clone(&message));
                }
            }
        }
    }

    /// Checks that the allocation's contents are what the program wrote.
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Backend`] naming the refused submission, for an
    /// allocation whose last writes did not run.
    pub fn check_intact(&self, h: BufferHandle) -> Result<()> {
        let a = self.get(h)?;
        match &a.lost {
            None => Ok(()),
            Some(why) => Err(Error::Backend {
                message: format!(
                    "`{}` holds unknown data (the work that last wrote it did not run): {why}",
                    a.label
                ),
            }),
        }
    }

    /// Records that the allocation is written again from scratch: its contents are known.
    pub fn rewritten(&mut self, h: BufferHandle) {
        if let Some(a) = self.allocs.get_mut(h.key) {
            a.lost = None;
        }
    }

    /// Marks one allocation as holding unknown data: work that used it was refused.
    pub fn mark_lost(&mut self, h: BufferHandle, why: &str) {
        if let Some(a) = self.allocs.get_mut(h.key) {
            a.lost = Some(why.into());
        }
    }
}
