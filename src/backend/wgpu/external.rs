//! What the application's own wgpu work needs from the backend: a submission index of
//! vramkit's that completes only after a submission of the application's (see [`Context::track_external`](crate::Context::track_external)).

use std::time::Duration;

use super::WgpuBackend;
use crate::backend::SubmissionIndex;
use crate::error::{Error, Result};

impl WgpuBackend {
    /// A vramkit submission index that completes after `app`, a submission the application made
    /// on this backend's queue: an empty submission of vramkit's after it (wgpu's queue
    /// completes submissions in order).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `app` is later than every submission this device made
    /// (it comes from another device); [`Error::DeviceLost`].
    pub(crate) fn after_external(&self, app: &wgpu::SubmissionIndex) -> Result<SubmissionIndex> {
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
                    reason: "this device made no such submission: pass the index `Queue::submit` \
                             returned for work on the device vramkit runs on",
                })
            }
        }
        self.submit_now(true)
    }
}
