//! [`Context::wait_for`] one submission, and [`Context::limits`] without the backend traits.

use crate::backend::{Backend, BackendLimits, SubmissionIndex};
use crate::error::{Error, Result};
use crate::lock;
use crate::Context;

impl<B: Backend> Context<B> {
    /// Waits until submission `index` has finished: the index a kernel launch or
    /// [`submit`](Self::submit) returned. Work recorded but not yet submitted is submitted
    /// first (a launch returns the index of the submission that will hold it, which is still
    /// open), so waiting on a launch's index never hangs. Then, as [`wait`](Self::wait) does,
    /// returns released memory whose work has completed to the pools. Later submissions may
    /// still run.
    ///
    /// The open submission's index with nothing recorded in it (one past the last submitted)
    /// has nothing to wait for and returns at once.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let last = ctx.submit()?;
    /// ctx.wait_for(last)?;
    /// assert!(ctx.wait_for(last + 100).is_err()); // not handed out yet
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an index past the open submission's (no call returned
    /// it yet); [`Error::DeviceLost`]; [`Error::Backend`] if the API rejected recorded work.
    pub fn wait_for(&self, index: SubmissionIndex) -> Result<()> {
        // Submitting returns the last submitted index: the open one is the next.
        let last = self.backend.submit()?;
        if index > last.saturating_add(1) {
            return Err(Error::InvalidParameter {
                name: "index",
                value: format!("{index} (the last submitted is {last})"),
                reason: "no submission with this index was handed out yet: wait for an index \
                         that a launch or `submit` returned",
            });
        }
        if index <= last {
            self.backend.wait(index)?;
        }
        lock(&self.mem).collect(&self.backend)
    }

    /// What this context's device can allocate and bind: the largest block and binding, the
    /// offset and copy alignments, the most workgroups per launch, the largest params struct
    /// and texture side.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let limits = ctx.limits();
    /// assert!(limits.max_binding_size <= limits.max_block_size);
    /// ```
    pub fn limits(&self) -> BackendLimits {
        self.backend.limits().clone()
    }
}
