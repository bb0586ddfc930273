//! What the application's own wgpu work needs from the backend: a submission index of
//! vramkit's that completes only after a submission of the application's (see [`Interop::track_external`](crate::interop::Interop::track_external)).

use std::time::Duration;

use super::WgpuBackend;
use crate::types::error::{Error, Result};
use crate::types::QueueIndex;

impl WgpuBackend {
    /// A vramkit submission index that completes after `app`, a submission the application made
    /// on this backend's queue: an empty submission of vramkit's after it (wgpu's queue
    /// completes submissions in order).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `app` is later than every submission this device made
    /// (it comes from another device); [`Error::DeviceLost`].
    pub(crate) fn after_external(&self, app: &wgpu::SubmissionIndex) -> Result<QueueIndex> {
        self.check_lost()?;
        // A wait of no time tells whether the device made the submission at all.
        let probe = wgpu::PollType::Wait {
            submission_index: Some(app.clone()),
            timeout: Some(Duration::ZERO),
        };
        match self.device.poll(probe) {
            Ok(_) | Err(wgpu::PollError::Timeout) => {}
            Err(e @ wgpu::PollError::WrongSubmissionIndex(..)) => {
                return Err(Error::InvalidParameter {
                    name: "wgpu submission index",
                    value: e.to_string(),
                    reason: "this device ran no such submission: it comes from another device, \
                             or the device refused that submission (your error handler or error \
                             scope got why; nothing of it runs, so there is nothing to track); \
                             pass the index `Queue::submit` returned for work the device took",
                })
            }
        }
        self.submit_now(true)
    }

    /// Submits vramkit's recorded work, then the application's `buffers` as a submission of
    /// their own (so that a command buffer the device refuses takes none of vramkit's work
    /// with it); returns the second's index.
    ///
    /// # Errors
    /// [`Error::Backend`] if the device refused a submission (none of it ran);
    /// [`Error::DeviceLost`].
    pub(crate) fn submit_with(&self, buffers: Vec<wgpu::CommandBuffer>) -> Result<QueueIndex> {
        self.submit_now(false)?;
        self.submit_commands(true, buffers)
    }
}
