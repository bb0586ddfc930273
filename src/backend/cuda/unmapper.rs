//! Unmapping off the allocation path: the pages a segment gives back, and the old places of
//! pages moved, are unmapped by a thread of the backend's own, so that `cuMemUnmap` and
//! `cuMemRelease` (about 30 µs a page on an H100, more while kernels run) are not paid inside
//! an allocation.
//!
//! The rules that keep this sound:
//! - A range is queued only once nothing uses it (the callers' promise, as for an unmap done
//!   at once), and it has left its segment's list of mappings: nothing maps, reads or writes it
//!   until the thread is done with it.
//! - Before anything is mapped at an address, every queued range that meets it is waited for
//!   ([`Unmapper::wait_for`]): an address is never mapped twice.
//! - Before a segment's address range is freed, before the driver's free memory is read, a
//!   refused `cuMemCreate` is tried again or the memory manager reclaims memory under pressure,
//!   and before the backend's stream goes, the queue is drained ([`Unmapper::flush`]).
//! - The thread synchronises the backend's stream before each job (the whole stream: work
//!   recorded after the job waits too, off the allocation's path): work recorded there before
//!   the job (a growth's clear) finishes before its pages go. A job whose mappings a foreign
//!   stream's work may still use (pages moved to that stream's next request) carries an event
//!   recorded on that stream, which the thread waits for first. Where the wait fails with an
//!   error the context survives, the job is tried again a little later; where the context is
//!   lost, its memory goes with it and the job is dropped.
//! - The driver's errors come back to the backend at its next call into the queue, as errors
//!   of calls that return none do.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use cudarc::driver::result::{event, DriverError};
use cudarc::driver::sys;

use super::segment::Mapping;
use super::unmap::{release_all, unmap_all};
use super::CudaBackend;

/// Mappings of the segment at `ptr` to unmap, and whether their memory goes back too (pages
/// given back) or stays with another mapping of the same handles (pages moved).
struct Job {
    ptr: sys::CUdeviceptr,
    maps: Vec<Mapping>,
    release: bool,
    after: Option<StreamPoint>,
}

/// An event recorded on a foreign stream, whose work before it may still use a job's
/// mappings; destroyed with the job.
pub(super) struct StreamPoint(sys::CUevent);

// SAFETY: an event may be waited for and destroyed from any thread with its context current
// (the unmapping thread binds the backend's).
unsafe impl Send for StreamPoint {}

impl StreamPoint {
    /// An event recorded on `stream` now.
    ///
    /// # Safety
    /// 1. The backend's context is current, and `stream` a live stream of it (or a default
    ///    stream).
    pub(super) unsafe fn record(stream: sys::CUstream) -> Result<Self, DriverError> {
        let ev = event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
        let point = Self(ev);
        // SAFETY: a live event of the current context; the stream is the caller's promise.
        unsafe { event::record(point.0, stream) }?;
        Ok(point)
    }
}

impl Drop for StreamPoint {
    fn drop(&mut self) {
        // SAFETY: created by `record` and destroyed once, here; nothing waits on it now.
        let _ = unsafe { event::destroy(self.0) };
    }
}

impl Job {
    /// The device addresses the job unmaps, from the first mapping's start to the last's end.
    fn span(&self) -> Range<u64> {
        let start = self.maps.first().map_or(0, |m| self.ptr + m.offset);
        let end = self.maps.last().map_or(0, |m| self.ptr + m.offset + m.size);
        start..end
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// The span of the job the thread is running.
    running: Option<Range<u64>>,
    /// The driver's errors, for the backend to report.
    errors: Vec<(&'static str, DriverError)>,
    stop: bool,
}

impl Queue {
    fn meets(&self, r: &Range<u64>) -> bool {
        let hit = |s: &Range<u64>| s.start < r.end && r.start < s.end;
        self.running.as_ref().is_some_and(hit) || self.jobs.iter().any(|j| hit(&j.span()))
    }

    fn idle(&self) -> bool {
        self.jobs.is_empty() && self.running.is_none()
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a job is queued (the thread waits) and when one is done (callers wait).
    changed: Condvar,
}

/// Raw handles the thread uses. CUDA contexts and streams may be used from any thread.
struct Handles {
    ctx: sys::CUcontext,
    stream: sys::CUstream,
}

// SAFETY: a context may be made current on any thread and a stream used from any thread with
// its context current; the driver API is thread-safe.
unsafe impl Send for Handles {}

/// The backend's unmapping thread (started at the first job) and its queue.
pub(super) struct Unmapper {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    ordinal: i32,
}

// SAFETY: the raw handles are only handed to the thread, which may use them (see `Handles`);
// the rest is behind mutexes.
unsafe impl Send for Unmapper {}
// SAFETY: as above.
unsafe impl Sync for Unmapper {}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Unmapper {
    pub(super) fn new(ctx: sys::CUcontext, stream: sys::CUstream, ordinal: i32) -> Self {
        Self {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue::default()),
                changed: Condvar::new(),
            }),
            thread: Mutex::new(None),
            ctx,
            stream,
            ordinal,
        }
    }

    /// Queues `maps` of the segment at `ptr` (sorted by offset, out of its list) to be
    /// unmapped, and released with `release`, once the backend's stream and the foreign stream
    /// of `after` passed; where the thread cannot start, unmaps them now (waiting for both).
    /// Returns the driver's errors of earlier jobs (or of this one, done now).
    ///
    /// # Safety
    /// 1. No unfinished work uses the mappings, except work recorded on the backend's stream
    ///    before this call and work recorded before `after` on its stream, and nothing maps
    ///    at their addresses before [`wait_for`](Self::wait_for) them.
    /// 2. Each mapping is unmapped once, and released once where `release`.
    pub(super) unsafe fn push(
        &self,
        ptr: sys::CUdeviceptr,
        maps: Vec<Mapping>,
        release: bool,
        after: Option<StreamPoint>,
    ) -> Vec<(&'static str, DriverError)> {
        let job = Job {
            ptr,
            maps,
            release,
            after,
        };
        if job.maps.is_empty() {
            return self.take_errors();
        }
        if !self.started() {
            let mut errors = self.take_errors();
            // SAFETY: the caller's promise.
            errors.extend(unsafe { execute(&job, self.stream) });
            return errors;
        }
        let mut q = lock(&self.shared.queue);
        q.jobs.push_back(job);
        let errors = std::mem::take(&mut q.errors);
        drop(q);
        self.shared.changed.notify_all();
        errors
    }

    /// Waits until no queued job meets the device addresses `r`; returns the driver's errors.
    pub(super) fn wait_for(&self, r: Range<u64>) -> Vec<(&'static str, DriverError)> {
        self.wait_until(|q| !q.meets(&r))
    }

    /// Waits until every queued job is done; returns the driver's errors.
    pub(super) fn flush(&self) -> Vec<(&'static str, DriverError)> {
        self.wait_until(Queue::idle)
    }

    fn wait_until(&self, done: impl Fn(&Queue) -> bool) -> Vec<(&'static str, DriverError)> {
        let mut q = lock(&self.shared.queue);
        while !done(&q) {
            q = self
                .shared
                .changed
                .wait(q)
                .unwrap_or_else(|e| e.into_inner());
        }
        std::mem::take(&mut q.errors)
    }

    fn take_errors(&self) -> Vec<(&'static str, DriverError)> {
        std::mem::take(&mut lock(&self.shared.queue).errors)
    }

    /// Starts the thread if it is not running; whether it runs.
    fn started(&self) -> bool {
        let mut t = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        if t.is_some() {
            return true;
        }
        let shared = Arc::clone(&self.shared);
        let handles = Handles {
            ctx: self.ctx,
            stream: self.stream,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("vramkit-unmap-{}", self.ordinal))
            .spawn(move || run(&shared, handles));
        match spawned {
            Ok(h) => {
                *t = Some(h);
                true
            }
            Err(e) => {
                log::warn!("vramkit: the unmapping thread did not start ({e}); unmapping inline");
                false
            }
        }
    }
}

impl Drop for Unmapper {
    fn drop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.changed.notify_all();
        let t = self.thread.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = t.take() {
            // The thread drains the queue before it stops: every range is unmapped before the
            // context goes.
            let _ = t.join();
        }
    }
}

impl CudaBackend {
    /// Records the unmapping thread's errors for the next call that can fail.
    pub(super) fn report_unmaps(&self, errors: Vec<(&'static str, DriverError)>) {
        for (op, e) in errors {
            self.record_err(op, e);
        }
    }

    /// Before memory is mapped at device addresses `r`: waits for the ranges queued there.
    pub(super) fn before_map(&self, r: Range<u64>) {
        if let Some(u) = &self.unmapper {
            self.report_unmaps(u.wait_for(r));
        }
    }

    /// Waits until every queued range is unmapped.
    pub(super) fn drain_unmaps(&self) {
        if let Some(u) = &self.unmapper {
            self.report_unmaps(u.flush());
        }
    }
}

/// How often the thread tries a job again whose stream wait failed with an error the context
/// survives, a millisecond apart, before it reports the error and leaves the job's memory
/// mapped (the stream may still run work on it).
const SYNC_TRIES: u32 = 200;

/// The thread: runs jobs in order until told to stop with none left.
fn run(shared: &Shared, handles: Handles) {
    let bound = {
        // SAFETY: the context is retained by the backend, which drops the unmapper (joining
        // this thread) before it releases the context.
        unsafe { sys::cuCtxSetCurrent(handles.ctx) }.result()
    };
    loop {
        let mut q = lock(&shared.queue);
        while q.jobs.is_empty() && !q.stop {
            q = shared.changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        let Some(job) = q.jobs.pop_front() else {
            return;
        };
        q.running = Some(job.span());
        drop(q);
        let errors = match bound {
            Err(e) => vec![("cuCtxSetCurrent", e)],
            // A panic (a driver entry point missing) must not leave the job running forever:
            // every wait for it would hang.
            Ok(()) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: see `push`: nothing uses the mappings but work recorded on the
                // stream before the job, waited for here; each is unmapped (and released)
                // once.
                unsafe { execute(&job, handles.stream) }
            }))
            .unwrap_or_else(|_| {
                vec![(
                    "cuMemUnmap",
                    DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED),
                )]
            }),
        };
        let mut q = lock(&shared.queue);
        q.running = None;
        q.errors.extend(errors);
        drop(q);
        shared.changed.notify_all();
    }
}

/// Waits for `wait` to succeed, trying again a millisecond later where it fails with an error
/// the context survives (a capture elsewhere that forbids the wait), [`SYNC_TRIES`] times.
fn retried(wait: impl Fn() -> Result<(), DriverError>) -> Result<(), DriverError> {
    let mut tries = 0;
    loop {
        match wait() {
            Ok(()) => return Ok(()),
            Err(e) if !super::driver::is_sticky(e) && tries < SYNC_TRIES => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits for the foreign stream's point and the backend's stream, then unmaps (and releases)
/// the job's mappings.
///
/// # Safety
/// As [`Unmapper::push`].
unsafe fn execute(job: &Job, stream: sys::CUstream) -> Vec<(&'static str, DriverError)> {
    if let Some(point) = &job.after {
        // SAFETY: a live event, recorded, destroyed only with the job.
        if let Err(e) = retried(|| unsafe { sys::cuEventSynchronize(point.0) }.result()) {
            // The context is lost, or the wait keeps failing: unmapping now could pull memory
            // from under work that did not finish.
            return vec![("cuEventSynchronize", e)];
        }
    }
    // SAFETY: the stream is alive while the backend is, and the backend drops the unmapper
    // (draining the queue, joining this thread) before it destroys the stream.
    if let Err(e) = retried(|| unsafe { sys::cuStreamSynchronize(stream) }.result()) {
        // The context is lost, and its memory with it; or the wait keeps failing. Unmapping
        // now could pull memory from under work that did not finish.
        return vec![("cuStreamSynchronize", e)];
    }
    if job.release {
        // SAFETY: the caller's promise; the stream is idle.
        match unsafe { release_all(job.ptr, &job.maps) } {
            Ok(()) => Vec::new(),
            Err(e) => vec![("cuMemUnmap", e)],
        }
    } else {
        // SAFETY: as above; the handles stay with their other mappings.
        let unmapped = unsafe { unmap_all(job.ptr, &job.maps) };
        unmapped
            .into_iter()
            .filter_map(|r| r.err().map(|e| ("cuMemUnmap", e)))
            .take(1)
            .collect()
    }
}
