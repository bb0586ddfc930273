//! The host backend's model of streams it does not own, so that the ordering of memory used on
//! them is testable without a GPU.
//!
//! A foreign stream is idle unless a test holds it ([`HostBackend::hold_stream`]): it then
//! "runs" work, and marks recorded on it stay pending until the test resumes it
//! ([`HostBackend::resume_stream`]), as CUDA events do while a kernel runs. Waiting for a
//! pending mark is the host waiting for the device: the stream's work finishes then (its
//! stream resumes), so tests see when vramkit had to wait.
//!
//! [`HostBackend::hold_stream`]: super::host::HostBackend::hold_stream
//! [`HostBackend::resume_stream`]: super::host::HostBackend::resume_stream

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::host::HostBackend;
use super::{ForeignStream, StreamMark};
use crate::types::lock;

#[derive(Default)]
struct State {
    /// Streams running work.
    held: HashSet<ForeignStream>,
    /// Streams being captured into a graph (no point of theirs can be waited for).
    captured: HashSet<ForeignStream>,
    /// Pending marks and their streams.
    pending: HashMap<u64, ForeignStream>,
    next: u64,
}

/// Foreign streams and their marks.
#[derive(Default)]
pub(super) struct HostStreams {
    state: Mutex<State>,
}

impl std::fmt::Debug for HostStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStreams").finish_non_exhaustive()
    }
}

impl HostStreams {
    pub(super) fn hold(&self, stream: ForeignStream) {
        lock(&self.state).held.insert(stream);
    }

    pub(super) fn resume(&self, stream: ForeignStream) {
        let mut s = lock(&self.state);
        s.held.remove(&stream);
        s.pending.retain(|_, on| *on != stream);
    }

    pub(super) fn mark(&self, stream: ForeignStream) -> StreamMark {
        let mut s = lock(&self.state);
        s.next += 1;
        let id = s.next;
        if s.held.contains(&stream) {
            s.pending.insert(id, stream);
        }
        StreamMark(id)
    }

    pub(super) fn done(&self, mark: StreamMark) -> bool {
        !lock(&self.state).pending.contains_key(&mark.0)
    }

    /// Waits for a mark: its stream's work finishes now.
    pub(super) fn wait(&self, mark: StreamMark) {
        let stream = lock(&self.state).pending.get(&mark.0).copied();
        if let Some(stream) = stream {
            self.resume(stream);
        }
    }

    pub(super) fn set_captured(&self, stream: ForeignStream, captured: bool) {
        let mut s = lock(&self.state);
        if captured {
            s.captured.insert(stream);
        } else {
            s.captured.remove(&stream);
        }
    }

    pub(super) fn is_captured(&self, stream: ForeignStream) -> bool {
        lock(&self.state).captured.contains(&stream)
    }

    pub(super) fn is_held(&self, stream: ForeignStream) -> bool {
        lock(&self.state).held.contains(&stream)
    }

    pub(super) fn forget(&self, mark: StreamMark) {
        lock(&self.state).pending.remove(&mark.0);
    }
}

impl HostBackend {
    /// Makes a foreign stream "run work" (a model for tests): marks recorded on it from now on
    /// stay pending until [`resume_stream`](Self::resume_stream), as CUDA events recorded
    /// behind a running kernel do.
    ///
    /// ```
    /// use vramkit::backend::{host::HostBackend, ForeignStream, Storage};
    /// let b = HostBackend::default();
    /// // SAFETY: the host backend's streams are numbers of its model.
    /// let s = unsafe { ForeignStream::from_raw(7) };
    /// b.hold_stream(s);
    /// let mark = b.mark_stream(s)?;
    /// assert!(!b.mark_done(mark)?);
    /// b.resume_stream(s);
    /// assert!(b.mark_done(mark)?);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn hold_stream(&self, stream: ForeignStream) {
        self.streams.hold(stream);
    }

    /// Finishes the work of a held stream: its pending marks are done. vramkit waiting for a
    /// mark of a held stream does the same (the host waits until the device is done).
    pub fn resume_stream(&self, stream: ForeignStream) {
        self.streams.resume(stream);
    }

    /// Whether a stream is held ([`hold_stream`](Self::hold_stream)) and not resumed since.
    pub fn is_held(&self, stream: ForeignStream) -> bool {
        self.streams.is_held(stream)
    }

    /// Models a stream being captured into a CUDA graph (`true`) or no longer (`false`): pages
    /// it released do not move behind it ([`Storage::move_pages_after`] declines, as the CUDA
    /// backend's does).
    ///
    /// [`Storage::move_pages_after`]: super::Storage::move_pages_after
    pub fn capture_stream(&self, stream: ForeignStream, captured: bool) {
        self.streams.set_captured(stream, captured);
    }
}
