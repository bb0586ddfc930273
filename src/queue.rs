//! Submissions of a context's work ([`SubmissionIndex`]), [`Context::wait_for`] one of them,
//! and [`Context::limits`] without the backend traits.

use crate::backend::Backend;
use crate::types::error::{Error, Result, StaleReason};
use crate::types::{BackendLimits, QueueIndex};
use crate::Context;

/// One submission of a context's recorded work, as kernel launches and
/// [`Context::submit`] return it. It carries its context: another context's
/// [`wait_for`](Context::wait_for) refuses it, as it refuses another context's handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SubmissionIndex {
    context: u32,
    index: QueueIndex,
}

impl SubmissionIndex {
    /// The backend's index of the submission (what [`Storage`](crate::backend::Storage)
    /// calls take): indices grow by one per submission of the context's queue.
    pub fn index(&self) -> QueueIndex {
        self.index
    }

    /// Whether this submission comes after `other`, of the same context (`None` for
    /// another context's).
    pub fn is_after(&self, other: &SubmissionIndex) -> Option<bool> {
        (self.context == other.context).then_some(self.index > other.index)
    }
}

impl<B: Backend> Context<B> {
    /// The public form of the backend's index `index`.
    pub(crate) fn submission(&self, index: QueueIndex) -> SubmissionIndex {
        SubmissionIndex {
            context: self.id,
            index,
        }
    }
}

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
    /// let other = vramkit::Context::host(Default::default());
    /// assert!(other.wait_for(last).is_err()); // another context's submission
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::StaleHandle`] for another context's submission; [`Error::DeviceLost`];
    /// [`Error::Backend`] if the API rejected recorded work.
    pub fn wait_for(&self, submission: SubmissionIndex) -> Result<()> {
        if submission.context != self.id {
            return Err(Error::StaleHandle {
                reason: StaleReason::ForeignContext,
            });
        }
        let index = submission.index;
        // Submitting returns the last submitted index: the open one is the next.
        let last = self.backend.submit()?;
        if index > last.saturating_add(1) {
            return Err(Error::Internal {
                message: format!(
                    "submission {index} of this context was handed out, but the last \
                     submitted is {last}"
                ),
            });
        }
        if index <= last {
            self.backend.wait(index)?;
        }
        self.manager().collect(&self.backend)
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
