//! Errors that happen where none can be returned (in `Drop`, in `free_block`), kept for the next
//! fallible call, as cudarc's `record_err` / `check_err`.

use std::sync::Mutex;

use crate::types::error::{Error, Result};
use crate::types::lock;

/// The first error recorded since the last [`take`](Self::take).
#[derive(Debug, Default)]
pub(crate) struct DeferredError(Mutex<Option<Error>>);

impl DeferredError {
    /// Keeps `e` for the next [`take`](Self::take), unless an earlier error waits there.
    pub fn record(&self, e: Error) {
        log::warn!("vramkit: {e} (returned by the next call that can fail)");
        lock(&self.0).get_or_insert(e);
    }

    /// `Err` with the recorded error, once; else `Ok`.
    pub fn take(&self) -> Result<()> {
        lock(&self.0).take().map_or(Ok(()), Err)
    }
}
