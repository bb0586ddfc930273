//! One stream of changes from the manager: each allocation, release, block, growth, page and
//! refusal is emitted once, as a [`Change`], and [`Manager::emit`] feeds it to the counters
//! (statistics, peaks, tags), the timeline and the allocation log. The code that changes
//! memory says what happened; what is kept of it lives here.

use std::fmt;
use std::time::Duration;

use super::Manager;
use crate::backend::Storage;
use crate::memory::trace::EventKind;
use crate::types::{Label, MemoryKind};

/// What changed.
pub(super) enum Change<'a> {
    /// A block taken from the device (a texture's included), `label` its first user where it
    /// has one.
    BlockMade {
        kind: MemoryKind,
        bytes: u64,
        label: Option<&'a Label>,
    },
    /// A segment grown at its end.
    SegmentGrown { kind: MemoryKind, bytes: u64 },
    /// A segment's end given back.
    SegmentShrunk { kind: MemoryKind, bytes: u64 },
    /// A block given back (the bytes it still held).
    BlockFreed { kind: MemoryKind, bytes: u64 },
    /// `pages` pages inside a segment mapped again.
    PagesMapped {
        kind: MemoryKind,
        bytes: u64,
        pages: u64,
    },
    /// `pages` free pages inside a segment given back.
    PagesGivenBack {
        kind: MemoryKind,
        bytes: u64,
        pages: u64,
    },
    /// A staging buffer made or freed.
    Staging {
        kind: MemoryKind,
        bytes: u64,
        made: bool,
    },
    /// An allocation (buffer or texture) made: `requested` bytes asked, `size` held.
    Alloc {
        kind: MemoryKind,
        tag: u32,
        requested: u64,
        size: u64,
        label: &'a Label,
        /// What the allocation log adds (where it lies, a texture's shape).
        detail: fmt::Arguments<'a>,
    },
    /// An allocation released.
    Release {
        kind: MemoryKind,
        tag: u32,
        requested: u64,
        size: u64,
        label: &'a Label,
    },
    /// A request refused: over the budget, or the device out of memory.
    Refused {
        kind: MemoryKind,
        over_budget: bool,
        bytes: u64,
    },
    /// `bytes` moved to or from an allocation (`what`: the transfer's kind), for the timeline.
    Transfer {
        what: EventKind,
        kind: MemoryKind,
        bytes: u64,
        label: &'a Label,
    },
    /// `pages` free pages moved where a request needed memory (memory held unchanged).
    PagesMoved { bytes: u64, pages: u64 },
    /// An allocation moved by compaction.
    AllocationMoved { bytes: u64 },
    /// Host time in one of the driver's memory calls.
    DriverCall { call: DriverCall, took: Duration },
    /// A compaction pass that moved `moved` bytes in `took`.
    Compacted {
        kind: MemoryKind,
        moved: u64,
        took: Duration,
    },
}

/// Which of the driver's memory calls ([`DriverTime`](crate::observe::DriverTime)).
#[derive(Clone, Copy)]
pub(super) enum DriverCall {
    /// A new block or a segment's growth.
    Grow,
    /// Pages given back, mapped again or moved.
    Pages,
    /// A block freed or a segment shrunk, with the wait for its last work.
    GiveBack,
}

impl DriverCall {
    /// The change of a call of this kind that started at `start` and has just returned.
    pub(super) fn since(self, start: std::time::Instant) -> Change<'static> {
        Change::DriverCall {
            call: self,
            took: start.elapsed(),
        }
    }
}

impl<B: Storage> Manager<B> {
    /// Counts a change, puts it on the timeline and in the allocation log.
    pub(super) fn emit(&mut self, change: Change<'_>) {
        use Change::*;
        let c = &mut self.counters;
        let grown = |bytes: u64| i64::try_from(bytes).unwrap_or(i64::MAX);
        let (what, kind, bytes, delta, label) = match change {
            BlockMade { kind, bytes, label } => {
                c.on_reserve(kind, bytes, true);
                c.on_block_alloc(kind);
                (EventKind::BlockGrow, kind, bytes, grown(bytes), label)
            }
            SegmentGrown { kind, bytes } => {
                c.on_resize(kind, grown(bytes));
                c.on_block_alloc(kind);
                (EventKind::BlockGrow, kind, bytes, grown(bytes), None)
            }
            SegmentShrunk { kind, bytes } => {
                c.on_resize(kind, -grown(bytes));
                (EventKind::BlockTrim, kind, bytes, -grown(bytes), None)
            }
            BlockFreed { kind, bytes } => {
                c.on_reserve(kind, bytes, false);
                (EventKind::BlockTrim, kind, bytes, -grown(bytes), None)
            }
            PagesMapped { kind, bytes, pages } => {
                c.pages.maps += 1;
                c.pages.pages += pages;
                c.pages.mapped_bytes += bytes;
                c.on_resize(kind, grown(bytes));
                (EventKind::BlockGrow, kind, bytes, grown(bytes), None)
            }
            PagesGivenBack { kind, bytes, pages } => {
                c.pages.unmaps += 1;
                c.pages.pages += pages;
                c.pages.unmapped_bytes += bytes;
                c.on_resize(kind, -grown(bytes));
                (EventKind::BlockTrim, kind, bytes, -grown(bytes), None)
            }
            Staging { kind, bytes, made } => {
                c.on_reserve(kind, bytes, made);
                let s = &mut c.staging[kind.index()];
                if made {
                    s.0 += bytes;
                    s.1 += 1;
                    (EventKind::StagingGrow, kind, bytes, grown(bytes), None)
                } else {
                    s.0 -= bytes;
                    s.1 -= 1;
                    (EventKind::StagingTrim, kind, bytes, -grown(bytes), None)
                }
            }
            Alloc {
                kind,
                tag,
                requested,
                size,
                label,
                detail,
            } => {
                c.on_alloc(kind, tag, requested, size);
                let level = self.settings.debug.allocation_level();
                if kind == MemoryKind::Texture {
                    log::log!(
                        level,
                        "vramkit: texture `{label}` {detail}; {} B in use",
                        c.in_use
                    );
                } else {
                    log::log!(
                        level,
                        "vramkit: alloc `{label}` {requested} B ({kind:?}, {detail}); {} B in use",
                        c.in_use,
                    );
                }
                (EventKind::Alloc, kind, requested, grown(size), Some(label))
            }
            Release {
                kind,
                tag,
                requested,
                size,
                label,
            } => {
                c.on_release(kind, tag, requested, size);
                let noun = if kind == MemoryKind::Texture {
                    "texture "
                } else {
                    ""
                };
                log::log!(
                    self.settings.debug.allocation_level(),
                    "vramkit: release {noun}`{label}` {requested} B ({kind:?}); {} B in use",
                    c.in_use,
                );
                (
                    EventKind::Release,
                    kind,
                    requested,
                    -grown(size),
                    Some(label),
                )
            }
            Refused {
                kind,
                over_budget,
                bytes,
            } => {
                c.on_error(kind, over_budget);
                let what = if over_budget {
                    EventKind::OverBudget
                } else {
                    EventKind::OutOfMemory
                };
                (what, kind, bytes, 0, None)
            }
            Transfer {
                what,
                kind,
                bytes,
                label,
            } => (what, kind, bytes, 0, Some(label)),
            PagesMoved { bytes, pages } => {
                c.pages.moves += 1;
                c.pages.pages += pages;
                c.pages.moved_bytes += bytes;
                return;
            }
            AllocationMoved { bytes } => {
                c.compaction.allocations_moved += 1;
                c.compaction.bytes_moved += bytes;
                return;
            }
            DriverCall { call, took } => {
                let d = &mut c.driver;
                *match call {
                    self::DriverCall::Grow => &mut d.grow,
                    self::DriverCall::Pages => &mut d.map,
                    self::DriverCall::GiveBack => &mut d.give_back,
                } += took;
                return;
            }
            Compacted { kind, moved, took } => {
                c.compaction.passes += 1;
                c.compaction.duration += took;
                (EventKind::Compact, kind, moved, 0, None)
            }
        };
        if let Some(r) = &mut self.recorder {
            r.push(what, kind, bytes, delta, label.cloned().unwrap_or_default());
        }
    }
}
