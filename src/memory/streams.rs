//! Memory used on several streams: vramkit's own queue and streams it does not own (a
//! program's CUDA streams, through [`Interop::alloc_on`](crate::interop::Interop::alloc_on) and the C
//! ABI).
//!
//! The rules, PyTorch's caching allocator's with `record_stream`:
//! - Memory released on stream S is reused **at once by later requests on S**: S runs the
//!   work that used it before any work recorded after the release.
//! - **Another stream** takes memory only once every other stream's releases are known to
//!   have passed: before a request on T is placed, each stream that released memory since it
//!   was last confirmed gets a mark (a CUDA event; a submission on vramkit's own queue), and T
//!   waits for the marks that are not done yet. A program on one stream never pays for this
//!   (no stream other than its own ever releases), and neither does one that never uses
//!   foreign streams (nothing here runs until the first allocation on one).
//! - Memory **also used on other streams** ([`Interop::record_stream`](crate::interop::Interop::record_stream))
//!   is held when released, with a mark on each of those streams, and returns to its pool
//!   (as a release on its own stream) once every mark is done.
//! - Before memory goes back to the device (a block freed, a segment end unmapped) every
//!   stream's releases are confirmed, waiting where needed, as PyTorch synchronises before
//!   `cudaFree`; free pages inside a segment may go without a wait where they were freed
//!   before the oldest release some stream has not passed ([`Streams::horizon`]).

use super::pool::Placement;
use crate::backend::{ForeignStream, Storage, StreamMark, StreamRef};
use crate::types::error::Result;
use crate::types::{MemoryKind, QueueIndex};

/// A point on a stream.
#[derive(Clone, Copy, Debug)]
enum Mark {
    Own(QueueIndex),
    Foreign(StreamMark),
}

impl Mark {
    fn on<B: Storage>(backend: &B, stream: StreamRef) -> Result<Self> {
        Ok(match stream {
            StreamRef::Own => Mark::Own(backend.submit()?),
            StreamRef::Foreign(s) => Mark::Foreign(backend.mark_stream(s)?),
        })
    }

    fn done<B: Storage>(self, backend: &B, wait: bool) -> Result<bool> {
        match (self, wait) {
            (Mark::Own(i), false) => backend.is_done(i),
            (Mark::Own(i), true) => backend.wait(i).map(|()| true),
            (Mark::Foreign(m), false) => backend.mark_done(m),
            (Mark::Foreign(m), true) => backend.wait_mark(m).map(|()| true),
        }
    }

    fn forget<B: Storage>(self, backend: &B) {
        if let Mark::Foreign(m) = self {
            backend.forget_mark(m);
        }
    }
}

/// One stream's releases: how many, how many are known to have passed, and the mark that
/// will tell about the rest.
#[derive(Debug)]
struct Entry {
    stream: StreamRef,
    released: u64,
    confirmed: u64,
    /// A mark and the release count it covers.
    mark: Option<(Mark, u64)>,
    /// The stamp ([`Streams::seq`]) of the oldest release not known to have passed (`NONE`:
    /// every release passed).
    oldest: u64,
    /// The stamp of the first release after the mark was made (`NONE`: none yet).
    after_mark: u64,
}

/// No stamp.
const NONE: u64 = u64::MAX;

impl Entry {
    /// Marks the stream where it is now, covering every release so far (a mark made before
    /// is forgotten).
    fn mark_all<B: Storage>(&mut self, backend: &B) -> Result<()> {
        if let Some((old, _)) = self.mark.take() {
            old.forget(backend);
        }
        self.mark = Some((Mark::on(backend, self.stream)?, self.released));
        self.after_mark = NONE;
        Ok(())
    }
}

/// A released allocation that other streams still use.
pub(crate) struct HeldUse {
    marks: Vec<StreamMark>,
    pub kind: MemoryKind,
    pub placement: Placement,
    /// The allocation's own stream, whose release it becomes.
    pub stream: StreamRef,
    /// The last submission of vramkit's own queue that used it (0: none).
    pub last_use: QueueIndex,
}

impl HeldUse {
    /// A release of `placement` on `stream`, to hold until other streams pass it.
    pub fn new(
        kind: MemoryKind,
        placement: Placement,
        stream: StreamRef,
        last_use: QueueIndex,
    ) -> Self {
        Self {
            marks: Vec::new(),
            kind,
            placement,
            stream,
            last_use,
        }
    }
}

/// The manager's streams.
#[derive(Default)]
pub(crate) struct Streams {
    /// Whether an allocation was ever made on a foreign stream; until then nothing runs
    /// ([`activate`](Self::activate)).
    pub active: bool,
    entries: Vec<Entry>,
    held: Vec<HeldUse>,
    /// Bytes in `held`.
    pub held_bytes: u64,
    /// Host time spent in [`settle`](Self::settle) waiting.
    pub waited: std::time::Duration,
    /// Of `waited`, the part before free pages went back or moved (counted by the manager).
    pub waited_for_pages: std::time::Duration,
    /// Releases counted, on every stream: the stamp of the latest. Memory freed now is safe to
    /// give back to the device once the [`horizon`](Self::horizon) has passed this.
    pub seq: u64,
}

impl Streams {
    /// Starts ordering streams (at the first allocation on a foreign stream). vramkit's own
    /// queue may still run work on memory released before: it counts as a release there.
    pub fn activate(&mut self) {
        if !self.active {
            self.active = true;
            self.on_release(StreamRef::Own);
        }
    }

    /// Counts a release on `stream`.
    #[inline]
    pub fn on_release(&mut self, stream: StreamRef) {
        if !self.active {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        match self.entries.iter_mut().find(|e| e.stream == stream) {
            Some(e) => {
                e.released += 1;
                if e.oldest == NONE {
                    e.oldest = seq;
                }
                if e.mark.is_some() && e.after_mark == NONE {
                    e.after_mark = seq;
                }
            }
            None => self.entries.push(Entry {
                stream,
                released: 1,
                confirmed: 0,
                mark: None,
                oldest: seq,
                after_mark: NONE,
            }),
        }
    }

    /// The stamp of the oldest release on any stream not known to have passed (`u64::MAX`:
    /// every release passed): memory freed at a lower stamp is used by no stream's work.
    pub fn horizon(&self) -> u64 {
        self.entries.iter().map(|e| e.oldest).min().unwrap_or(NONE)
    }

    /// Confirms the releases of every stream but `on` (`None`: of every stream), marking
    /// those not yet covered by a mark. With `wait`, blocks until they have passed and returns
    /// `true`; else returns whether all have.
    pub fn settle<B: Storage>(
        &mut self,
        backend: &B,
        on: Option<StreamRef>,
        wait: bool,
    ) -> Result<bool> {
        let due = |e: &Entry| Some(e.stream) != on && e.released != e.confirmed;
        if wait && self.entries.iter().any(due) {
            let start = std::time::Instant::now();
            let r = self.settle_now(backend, on, true);
            self.waited += start.elapsed();
            return r;
        }
        self.settle_now(backend, on, wait)
    }

    fn settle_now<B: Storage>(
        &mut self,
        backend: &B,
        on: Option<StreamRef>,
        wait: bool,
    ) -> Result<bool> {
        let mut all = true;
        for e in &mut self.entries {
            if Some(e.stream) == on || e.released == e.confirmed {
                continue;
            }
            // Waiting, one mark covers every release. Polling, a mark made earlier is kept
            // until it is done (a new one would only pass later), then another covers the rest.
            let stale = e.mark.is_some_and(|(_, covers)| covers != e.released);
            if e.mark.is_none() || (wait && stale) {
                e.mark_all(backend)?;
            }
            let Some((mark, covers)) = e.mark else {
                continue;
            };
            if mark.done(backend, wait)? {
                mark.forget(backend);
                e.mark = None;
                e.confirmed = covers;
                e.oldest = if covers == e.released {
                    NONE
                } else {
                    e.after_mark
                };
                e.after_mark = NONE;
                if e.confirmed != e.released {
                    e.mark_all(backend)?;
                    all = false;
                }
            } else {
                all = false;
            }
        }
        Ok(all)
    }

    /// Confirms every stream's releases (waiting) and forgets `stream`'s entry: vramkit marks
    /// it no more until memory is released on it again.
    pub fn forget<B: Storage>(&mut self, backend: &B, stream: StreamRef) -> Result<()> {
        self.settle(backend, None, true)?;
        self.entries.retain(|e| e.stream != stream);
        Ok(())
    }

    /// Holds a released allocation until every stream in `uses` has passed this point.
    pub fn hold<B: Storage>(
        &mut self,
        backend: &B,
        uses: &[ForeignStream],
        release: HeldUse,
    ) -> Result<()> {
        let mut marks = Vec::with_capacity(uses.len());
        for &s in uses {
            match backend.mark_stream(s) {
                Ok(m) => marks.push(m),
                Err(e) => {
                    for m in marks {
                        backend.forget_mark(m);
                    }
                    return Err(e);
                }
            }
        }
        self.held_bytes += release.placement.size;
        self.held.push(HeldUse { marks, ..release });
        Ok(())
    }

    /// Whether releases are held for other streams.
    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// Takes the held releases whose streams have all passed (all of them, waiting, with
    /// `wait`).
    pub fn take_passed<B: Storage>(&mut self, backend: &B, wait: bool) -> Result<Vec<HeldUse>> {
        let mut passed = Vec::new();
        let mut i = 0;
        while i < self.held.len() {
            let h = &mut self.held[i];
            let mut j = 0;
            while j < h.marks.len() {
                let m = h.marks[j];
                let done = if wait {
                    backend.wait_mark(m).map(|()| true)?
                } else {
                    backend.mark_done(m)?
                };
                if done {
                    backend.forget_mark(m);
                    h.marks.swap_remove(j);
                } else {
                    j += 1;
                }
            }
            if h.marks.is_empty() {
                let h = self.held.swap_remove(i);
                self.held_bytes -= h.placement.size;
                passed.push(h);
            } else {
                i += 1;
            }
        }
        Ok(passed)
    }
}
