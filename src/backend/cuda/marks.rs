//! Marks on streams the backend does not own: one CUDA event per mark, recorded on the
//! caller's stream; events are reused once forgotten.

use std::collections::HashMap;

use cudarc::driver::result::event;
use cudarc::driver::sys::{self, CUresult};

use super::CudaBackend;
use crate::backend::{ForeignStream, StreamMark};
use crate::types::error::Result;
use crate::types::lock;

/// Recorded events by mark, and spare ones.
#[derive(Default)]
pub(super) struct Marks {
    live: HashMap<u64, sys::CUevent>,
    spare: Vec<sys::CUevent>,
    next: u64,
}

// SAFETY: event handles may be used from any thread with their context current; the backend
// keeps `Marks` behind a mutex and binds the context before calling in.
unsafe impl Send for Marks {}

impl Marks {
    /// Destroys every event (the device is idle).
    pub(super) fn destroy(&mut self) {
        let all: Vec<_> = self.live.drain().map(|(_, ev)| ev).collect();
        for ev in all.into_iter().chain(self.spare.drain(..)) {
            // SAFETY: each event is destroyed once and never used again.
            let _ = unsafe { event::destroy(ev) };
        }
    }
}

impl CudaBackend {
    pub(super) fn record_mark(&self, stream: ForeignStream) -> Result<StreamMark> {
        self.enter()?;
        let mut marks = lock(&self.marks);
        let ev = match marks.spare.pop() {
            Some(ev) => ev,
            None => event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| self.fail("cuEventCreate", e))?,
        };
        // SAFETY: `ev` is a live event of the current context; the stream is a live stream of
        // this device's primary context or a default stream (`ForeignStream::from_raw`'s
        // contract: it stays alive while vramkit may mark it).
        if let Err(e) = unsafe { event::record(ev, stream.raw() as sys::CUstream) } {
            marks.spare.push(ev);
            return Err(self.fail("cuEventRecord", e));
        }
        marks.next += 1;
        let id = marks.next;
        marks.live.insert(id, ev);
        Ok(StreamMark(id))
    }

    pub(super) fn query_mark(&self, mark: StreamMark) -> Result<bool> {
        self.enter()?;
        let marks = lock(&self.marks);
        let Some(&ev) = marks.live.get(&mark.0) else {
            // Forgotten: nothing to wait for.
            return Ok(true);
        };
        // SAFETY: a live, recorded event.
        match unsafe { event::query(ev) } {
            Ok(()) => Ok(true),
            Err(e) if e.0 == CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(self.fail("cuEventQuery", e)),
        }
    }

    pub(super) fn sync_mark(&self, mark: StreamMark) -> Result<()> {
        self.enter()?;
        let ev = match lock(&self.marks).live.get(&mark.0) {
            Some(&ev) => ev,
            None => return Ok(()),
        };
        // SAFETY: a live, recorded event; it stays live while waited on, since only
        // `forget_mark` retires it and the memory manager forgets a mark after its wait.
        unsafe { event::synchronize(ev) }.map_err(|e| self.fail("cuEventSynchronize", e))
    }

    pub(super) fn drop_mark(&self, mark: StreamMark) {
        let mut marks = lock(&self.marks);
        if let Some(ev) = marks.live.remove(&mark.0) {
            marks.spare.push(ev);
        }
    }
}
