//! Seeing where memory goes: the summary table, checkpoints and growth, leak reports, and a
//! self-check of the counters.

pub use crate::memory::audit::{AuditReport, CounterMismatch};
pub use crate::memory::desc::AllocationInfo;
pub use crate::memory::report::{Checkpoint, Growth, LabelTotal};
pub use crate::memory::stats::{
    CompactionStats, DriverTime, KindStats, MemoryStats, PageStats, TagStats,
};
pub use crate::memory::trace::{Event, EventKind, Trace};

use crate::backend::Backend;
use crate::memory::report;
use crate::memory::trace::Recorder;
use crate::types::debug::DebugSettings;
use crate::types::error::{Error, Result};
use crate::{BufferHandle, Context};

/// What a context holds and has done: the summary table, allocations, checkpoints and growth,
/// leak reports, the timeline and a self-check of the counters. From [`Context::observe`].
pub struct Observe<'a, B: Backend> {
    ctx: &'a Context<B>,
}

impl<B: Backend> Context<B> {
    /// What the context holds and has done: the summary table, allocations, checkpoints,
    /// leaks, the timeline, the audit. ([`stats`](Self::stats) is the counters.)
    pub fn observe(&self) -> Observe<'_, B> {
        Observe { ctx: self }
    }
}

impl<B: Backend> Observe<'_, B> {
    /// The requested size of an allocation.
    ///
    /// # Errors
    /// [`Error::StaleHandle`].
    pub fn size_of(&self, handle: BufferHandle) -> Result<u64> {
        Ok(self.ctx.manager().get(handle)?.requested)
    }

    /// Where an allocation sits.
    ///
    /// # Errors
    /// [`Error::StaleHandle`].
    pub fn allocation_info(&self, handle: BufferHandle) -> Result<AllocationInfo> {
        self.ctx.manager().info(handle)
    }

    /// Every live allocation, largest first.
    pub fn allocations(&self) -> Vec<AllocationInfo> {
        self.ctx.manager().allocations()
    }

    /// The debug settings the context was created with.
    pub fn debug_settings(&self) -> DebugSettings {
        self.ctx.debug
    }

    /// A human-readable table of the context's memory, like `torch.cuda.memory_summary()`:
    /// totals and peaks, per memory kind (with fragmentation and error counts), per tag, and
    /// the largest live allocations grouped by label.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let w = ctx.alloc(vramkit::AllocDesc::new("layer 1", 4096).tag("weights")).unwrap();
    /// let table = ctx.observe().summary();
    /// assert!(table.contains("weights") && table.contains("layer 1"));
    /// # ctx.release(w).unwrap();
    /// ```
    pub fn summary(&self) -> String {
        let mut m = self.ctx.manager();
        let stats = m.stats();
        let live = m.allocations();
        drop(m);
        report::summary(
            &format!(
                "context {} on {}",
                self.ctx.id,
                self.ctx.backend.device_info()
            ),
            &stats,
            &live,
        )
    }

    /// Starts (or restarts) the timeline: every allocation, release, block and staging buffer
    /// taken or given back, and every refusal, with a timestamp and the counters after it, in a
    /// log of at most `capacity` events (the oldest go first). Timestamps come from a clock
    /// thread that ticks every 0.1 ms while any context traces (reading a clock per event would
    /// cost a third of an allocation on virtual machines): events within a tick share a time,
    /// and their order is exact. Costs one copy per event while on, nothing when off.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// ctx.observe().start_trace(10_000);
    /// let h = ctx.alloc(vramkit::AllocDesc::new("x", 4096)).unwrap();
    /// ctx.release(h).unwrap();
    /// let trace = ctx.observe().stop_trace().unwrap();
    /// assert!(trace.events.iter().any(|e| e.what == vramkit::observe::EventKind::Alloc));
    /// #[cfg(feature = "trace-export")]
    /// assert!(trace.to_chrome_json().contains("\"alloc\""));
    /// ```
    pub fn start_trace(&self, capacity: usize) {
        let mut m = self.ctx.manager();
        let s = m.stats();
        let base = std::array::from_fn(|i| (s.kinds[i].in_use, s.kinds[i].reserved));
        m.recorder = Some(Recorder::new(capacity, base));
    }

    /// The timeline so far, if tracing (exported by `Trace::to_chrome_json` and
    /// `Trace::to_svg`, feature `trace-export`).
    pub fn trace(&self) -> Option<Trace> {
        let device = self.ctx.backend.device_info().to_string();
        self.ctx.manager().trace(device)
    }

    /// Stops tracing and returns the timeline.
    pub fn stop_trace(&self) -> Option<Trace> {
        let t = self.trace();
        self.ctx.manager().recorder = None;
        t
    }

    /// Sets every peak of [`Context::stats`] (`peak_requested`, `peak_in_use`,
    /// `peak_reserved`, `peak_live`, and those of each kind and tag) to the figure it follows
    /// now, so that later peaks are those of what runs next, as PyTorch's
    /// `torch.cuda.reset_peak_memory_stats` does.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let big = ctx.alloc(vramkit::AllocDesc::new("big", 8 << 20))?;
    /// ctx.release(big)?;
    /// ctx.observe().reset_peaks();
    /// let small = ctx.alloc(vramkit::AllocDesc::new("small", 1 << 20))?;
    /// assert_eq!(ctx.stats().peak_requested, 1 << 20);
    /// # ctx.release(small)?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn reset_peaks(&self) {
        self.ctx.manager().reset_peaks();
    }

    /// Marks a point to measure growth from (see [`growth_since`](Self::growth_since)).
    pub fn checkpoint(&self) -> Checkpoint {
        let mut m = self.ctx.manager();
        Checkpoint {
            context: self.ctx.id,
            seq: m.seq(),
            stats: m.stats(),
        }
    }

    /// What was allocated since `cp` and is still alive, by label: in a loop that should not
    /// grow, this is the leak.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a checkpoint of another context.
    pub fn growth_since(&self, cp: &Checkpoint) -> Result<Growth> {
        if cp.context != self.ctx.id {
            return Err(Error::InvalidParameter {
                name: "checkpoint",
                value: format!("of context {}", cp.context),
                reason: "use a checkpoint of the context it measures",
            });
        }
        let mut m = self.ctx.manager();
        let now = m.stats();
        let live = m.live_since(cp.seq, false);
        drop(m);
        Ok(Growth {
            bytes: live.iter().map(|a| a.size).sum(),
            allocations: live.len(),
            by_label: report::by_label(&live),
            in_use_delta: now.in_use as i64 - cp.stats.in_use as i64,
            reserved_delta: now.reserved as i64 - cp.stats.reserved as i64,
        })
    }

    /// `Ok` when nothing allocated since `cp` is still alive, else [`Error::MemoryGrowth`] with
    /// the report: put it after a loop that must not leak, in a test or a debug build.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let cp = ctx.observe().checkpoint();
    /// for _ in 0..3 {
    ///     let tmp = ctx.alloc(vramkit::AllocDesc::new("scratch", 1024)).unwrap();
    ///     ctx.release(tmp).unwrap();
    /// }
    /// ctx.observe().check_no_growth(&cp).expect("the loop releases what it allocates");
    /// ```
    ///
    /// # Errors
    /// [`Error::MemoryGrowth`]; [`Error::InvalidParameter`] for another context's checkpoint.
    pub fn check_no_growth(&self, cp: &Checkpoint) -> Result<()> {
        let g = self.growth_since(cp)?;
        if g.is_empty() {
            return Ok(());
        }
        Err(Error::MemoryGrowth {
            bytes: g.bytes,
            allocations: g.allocations,
            report: g.to_string(),
        })
    }

    /// The live allocations, largest first, with where each was allocated with
    /// [`DebugSettings::backtraces`](crate::DebugSettings::backtraces): what would leak if the context were dropped now (dropping it logs
    /// the same list at warn level).
    pub fn leaks(&self) -> Vec<AllocationInfo> {
        self.ctx.manager().live_since(0, true)
    }

    /// Recomputes every counter from the live allocations and the pools' blocks and compares,
    /// and re-derives each pool's layout (chunks tile every block, free ranges are coalesced
    /// and indexed, allocations point at their ranges). A diagnostic for tests and bug
    /// reports; the counters are kept incrementally, so this walks everything.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("x", 1000))?;
    /// let report = ctx.observe().audit();
    /// assert!(report.is_clean(), "{report}");
    /// report.check()?; // the same, as an `Error::Internal` when it is not clean
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn audit(&self) -> AuditReport {
        let mut m = self.ctx.manager();
        let stats = m.stats();
        let live = m.allocations();
        let held = m.held();
        let layout = m.check_layout();
        drop(m);
        AuditReport::recount(&stats, &live, &held, layout.err())
    }
}
