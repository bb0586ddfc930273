//! Work the device refused after vramkit recorded it. wgpu reports some refusals only when a
//! command buffer is submitted, and then none of its work runs: the allocations it used hold
//! what they held before, which is not what the program recorded. The manager marks them, and
//! a download of a marked allocation fails (never returns stale data) until the allocation is
//! written again: uploaded whole, or bound whole and writable in a later launch (taken to write
//! it whole) whose other bindings hold no unknown data (a launch that binds unknown data passes
//! the mark on to what it writes).

use std::sync::Arc;

use super::Manager;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::BufferHandle;

impl<B: Storage> Manager<B> {
    /// Marks the allocations that refused submissions since the last call wrote: those whose
    /// last write is the refused submission or later (what only read them is not marked;
    /// work recorded after the refusal is marked too where the manager learns of it late,
    /// an error where data may be right, never stale data where it is wrong).
    pub fn note_refusals(&mut self, backend: &B) {
        for (n, message) in backend.refused_submissions() {
            let message: Arc<str> = message.into();
            for (_, a) in self.allocs.iter_mut() {
                if a.last_write >= n {
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

    /// Why the allocation's contents are unknown, if they are.
    pub fn lost_reason(&self, h: BufferHandle) -> Option<Arc<str>> {
        self.allocs.get(h.key).and_then(|a| a.lost.clone())
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
            if a.lost.as_deref() != Some(why) {
                a.lost = Some(why.into());
            }
        }
    }
}
