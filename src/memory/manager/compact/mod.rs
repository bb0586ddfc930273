//! Compaction: moving live allocations with device copies so that free memory becomes one
//! range, or a block becomes empty and can go back to the device, while every handle stays
//! valid (handles are indirect: only the manager's record of where an allocation lives changes).
//!
//! Two moves, both bounded by a byte count per pass:
//! - **A window** for a request that no free range holds although the free ranges add up to
//!   it: the range of one block, as long as the request, whose live allocations weigh least
//!   is emptied into free ranges elsewhere; the request takes it. Nothing is allocated from
//!   the device. This runs before a pool grows (`CompactionDesc::before_growth`) and under
//!   budget pressure.
//! - **Evacuating blocks**, sparsest first: their allocations move into free ranges of other
//!   blocks, and the emptied blocks go back to the device once the copies have run. Under
//!   budget pressure this frees room for a new block; [`Memory::compact`](crate::Memory::compact)
//!   and [`Memory::trim`](crate::Memory::trim) run it explicitly.
//! - **Sliding** allocations down over the free range before them within their block, so that
//!   a block's free space gathers at its end, where windows and evacuated allocations find
//!   room. Under budget pressure, and explicitly, when the free ranges are too scattered for
//!   the moves above.
//!
//! Ordering: copies are recorded on the backend's one queue (stream), after all work recorded
//! before them and before all work recorded after them, so an allocation that pending work
//! uses can move: the copy reads what that work wrote, and later work sees the new place.
//! Both blocks remember the copy (`fence`): memory reused there waits for it before the host
//! touches it. A block given back waits for its copies to complete. Host-visible allocations
//! released while pending work still uses them, and allocations made with
//! [`AllocDesc::immovable`](crate::AllocDesc::immovable), never move. Destinations are free
//! ranges the pool already holds, so compaction never exceeds the budget.

use std::time::{Duration, Instant};

use super::Manager;
use crate::backend::Storage;
use crate::types::error::Result;
use crate::types::MemoryKind;

mod evacuate;
mod moves;
mod slide;
mod window;

/// When the memory manager compacts on its own. See [`ContextDesc`](crate::ContextDesc).
///
/// ```
/// let c = vramkit::memory::CompactionDesc { before_growth: false, ..Default::default() };
/// assert_eq!(c.max_pass_bytes, 4 << 30);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionDesc {
    /// Compact instead of taking a new block when the free ranges of a pool add up to a
    /// request that none of them holds (default `true`). Keeps reserved memory close to what
    /// is in use, at the price of device copies. Under budget pressure compaction runs either
    /// way.
    pub before_growth: bool,
    /// The most bytes one automatic pass moves (default 4 GiB: about 2 ms of copies on an
    /// H200).
    pub max_pass_bytes: u64,
    /// Growth that keeps a pool's reserved bytes within `1 + slack_permille / 1000` times the
    /// most it has had in use (this request included) goes ahead without compaction (default
    /// 5: 0.5 %). 0 compacts whenever the free ranges could serve. With
    /// [`ContextDesc::follow_live`](crate::ContextDesc::follow_live), also the most the memory
    /// held may pass that peak.
    pub slack_permille: u32,
}

impl Default for CompactionDesc {
    fn default() -> Self {
        Self {
            before_growth: true,
            max_pass_bytes: 4 << 30,
            slack_permille: 5,
        }
    }
}

/// What a compaction pass did. See [`Memory::compact`](crate::Memory::compact).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// Bytes copied.
    pub bytes_moved: u64,
    /// Allocations moved.
    pub allocations_moved: u64,
    /// Blocks given back to the device.
    pub blocks_freed: u64,
    /// Bytes given back to the device.
    pub bytes_freed: u64,
    /// Time the pass took on the host, waiting for its copies included when blocks were
    /// given back.
    pub duration: Duration,
}

/// How far [`Manager::evacuate`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Goal {
    /// Until the budget leaves this many bytes of room.
    Room(u64),
    /// Until this many bytes of blocks went back.
    Free(u64),
    /// As far as it goes (empty cached blocks stay: the release threshold decides on those).
    All,
}

impl<B: Storage> Manager<B> {
    /// An explicit pass over the device and unified pools: evacuates the sparsest blocks into
    /// free ranges of others, then slides every block (gathering its free space at its end),
    /// moving at most `max_bytes` in all, and gives back what emptied (whole blocks, and the
    /// free ends of segments). Evacuation goes first: it is what gives fixed blocks back.
    pub fn compact(&mut self, backend: &B, max_bytes: u64) -> Result<CompactReport> {
        let start = Instant::now();
        self.collect(backend)?;
        let mut report = CompactReport::default();
        let before = self.counters.compaction.clone();
        for kind in [MemoryKind::Device, MemoryKind::Unified] {
            let moved = self.counters.compaction.bytes_moved - before.bytes_moved;
            let r = self.evacuate(backend, kind, Goal::All, max_bytes.saturating_sub(moved))?;
            report.blocks_freed += r.blocks_freed;
            report.bytes_freed += r.bytes_freed;
            let moved = self.counters.compaction.bytes_moved - before.bytes_moved;
            self.slide(backend, kind, max_bytes.saturating_sub(moved), None, None)?;
            report.bytes_freed += self.shrink_segments(backend, kind, 0)?;
        }
        report.bytes_moved = self.counters.compaction.bytes_moved - before.bytes_moved;
        report.allocations_moved =
            self.counters.compaction.allocations_moved - before.allocations_moved;
        report.duration = start.elapsed();
        Ok(report)
    }
}
