//! Submission indices over one CUDA stream: work is issued to the stream as it is recorded, and
//! `submit` records an event that marks everything before it with the next index.

use std::collections::VecDeque;

use cudarc::driver::result::{event, DriverError};
use cudarc::driver::sys::{self, CUresult};

use crate::types::QueueIndex;

type Failure = (&'static str, DriverError);

pub(super) struct Submissions {
    /// Index the open (recorded, not yet submitted) work will get.
    pub(super) open: QueueIndex,
    /// Whether work was issued since the last submit.
    pub(super) recorded: bool,
    /// Highest index known finished.
    completed: QueueIndex,
    /// Submitted, not known finished, oldest first.
    pending: VecDeque<(QueueIndex, sys::CUevent)>,
    /// Finished events, for reuse.
    spare: Vec<sys::CUevent>,
}

// SAFETY: event handles may be used from any thread with their context current; the backend
// keeps `Submissions` behind a mutex and binds the context before calling in.
unsafe impl Send for Submissions {}

impl Default for Submissions {
    fn default() -> Self {
        Self {
            open: 1,
            recorded: false,
            completed: 0,
            pending: VecDeque::new(),
            spare: Vec::new(),
        }
    }
}

impl Submissions {
    /// Work was issued: it belongs to the open index.
    pub(super) fn record(&mut self) -> QueueIndex {
        self.recorded = true;
        self.open
    }

    pub(super) fn submit(&mut self, stream: sys::CUstream) -> Result<QueueIndex, Failure> {
        if !self.recorded {
            return Ok(self.open - 1);
        }
        let ev = match self.spare.pop() {
            Some(ev) => ev,
            None => event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| ("cuEventCreate", e))?,
        };
        // SAFETY: `ev` and `stream` are live handles of the current context.
        unsafe { event::record(ev, stream) }.map_err(|e| ("cuEventRecord", e))?;
        self.pending.push_back((self.open, ev));
        self.recorded = false;
        self.open += 1;
        Ok(self.open - 1)
    }

    /// Retires every pending entry up to and including position `upto` (events finish in stream
    /// order).
    fn retire(&mut self, upto: usize) {
        for (index, ev) in self.pending.drain(..=upto) {
            self.completed = index;
            self.spare.push(ev);
        }
    }

    pub(super) fn poll(&mut self, index: QueueIndex) -> Result<bool, Failure> {
        if index <= self.completed {
            return Ok(true);
        }
        if index >= self.open {
            return Ok(false);
        }
        let mut done = None;
        for (i, &(n, ev)) in self.pending.iter().enumerate() {
            // SAFETY: `ev` is a live, recorded event.
            match unsafe { event::query(ev) } {
                Ok(()) => done = Some(i),
                Err(e) if e.0 == CUresult::CUDA_ERROR_NOT_READY => break,
                Err(e) => return Err(("cuEventQuery", e)),
            }
            if n >= index {
                break;
            }
        }
        if let Some(i) = done {
            self.retire(i);
        }
        Ok(index <= self.completed)
    }

    /// Blocks until submission `index` has finished (it must have been submitted, or be empty).
    pub(super) fn wait(&mut self, index: QueueIndex) -> Result<(), Failure> {
        if index <= self.completed {
            return Ok(());
        }
        // The first submission at or past `index` covers it; past every one, nothing pends.
        let Some(pos) = self.pending.iter().position(|&(n, _)| n >= index) else {
            if let Some(last) = self.pending.len().checked_sub(1) {
                // SAFETY: a live, recorded event.
                unsafe { event::synchronize(self.pending[last].1) }
                    .map_err(|e| ("cuEventSynchronize", e))?;
                self.retire(last);
            }
            return Ok(());
        };
        // SAFETY: a live, recorded event.
        unsafe { event::synchronize(self.pending[pos].1) }
            .map_err(|e| ("cuEventSynchronize", e))?;
        self.retire(pos);
        Ok(())
    }

    /// Destroys every event (the stream has been synchronised).
    pub(super) fn destroy(&mut self) {
        let events = self.pending.drain(..).map(|(_, ev)| ev);
        for ev in events.chain(self.spare.drain(..)).collect::<Vec<_>>() {
            // SAFETY: each event is destroyed once and never used again.
            let _ = unsafe { event::destroy(ev) };
        }
    }
}

impl super::CudaBackend {
    /// Waits for everything issued to the stream, as far as the context can still be entered:
    /// after a failure that leaves issued work without a submission the memory manager could
    /// wait for (a copy or a collective whose ordering failed), so that its memory is not
    /// reused under it. The wait's own failure is left to the next call that checks the device.
    pub(super) fn drain(&self) {
        if self.enter().is_ok() {
            // SAFETY: a live stream of the current context.
            let _ = unsafe { sys::cuStreamSynchronize(self.stream.0) };
        }
    }
}
