//! Placement: where a request goes when no free range of its class holds it, and how pools
//! grow. See the [manager's docs](super) for the order.

use std::time::Instant;

use super::super::geometry::{Class, Geometry};
use super::super::pool::{Placement, NIL};
use super::compact::Goal;
use super::emit::{Change, DriverCall};
use super::{is_refusal, Manager};
use crate::backend::{ForeignStream, PageGrid, Storage, StreamRef};
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

impl<B: Storage> Manager<B> {
    /// Finds room for `size` (aligned) bytes. See the module docs for the order.
    pub(super) fn place(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        (requested, size): (u64, u64),
        on: Option<ForeignStream>,
    ) -> Result<Placement> {
        // A pool of segments keeps everything in the large class's index (see `Pool::add_block`).
        let resizable = backend.resizable(kind);
        let class = if resizable {
            Class::Large
        } else {
            self.settings.geometry.class(size)
        };
        if let Some(p) = self.pools[kind.index()].try_place(class, size) {
            if !self.oversized_cache_hit(&p, kind, size) {
                return Ok(p);
            }
            // Under a budget, an empty cached block larger than what would be made for this
            // request now goes back, and a block that fits is made: the rest of the budget
            // stays usable by staging and the other pools.
            let pool = &mut self.pools[kind.index()];
            pool.free(p.chunk);
            if let Some(blk) = pool.remove_block(p.block) {
                self.free_block(backend, kind, blk);
            }
        }
        let c = self.settings.compaction;
        let other = match class {
            Class::Small => Class::Large,
            Class::Large => Class::Small,
        };
        // The other class's free ranges before any growth: a block less.
        if let Some(p) = self.pools[kind.index()].try_place(other, size) {
            return Ok(p);
        }
        if c.before_growth && self.growth_past_slack(kind, size, resizable) {
            // Growing would take reserved memory past the slack while the free ranges add up
            // to the request: reuse them, by a window in an existing block, else by giving
            // back sparse blocks to make room for the new one.
            let beyond = if backend.resizable(kind) {
                self.slack_room(kind, size)
            } else {
                0
            };
            if let Some(p) = self.compact_into_window(backend, kind, None, size, beyond)? {
                return Ok(p);
            }
            if backend.resizable(kind) {
                // Gather the segments' free space at their ends, where growth joins it.
                if let Some(p) = self.slide_and_place(backend, kind, class, size, beyond, false)? {
                    return Ok(p);
                }
            } else {
                let headroom = self.budget.headroom(self.counters.reserved);
                if let Some(block) = self.settings.geometry.new_block(size, headroom) {
                    self.evacuate(backend, kind, Goal::Free(block), c.max_pass_bytes)?;
                }
            }
        }
        let refusal = match self.grow(backend, kind, class, (requested, size), on) {
            Err(e) if is_refusal(&e) => e,
            other => return other,
        };
        // Under pressure.
        if self.reclaim(backend)? {
            if let Some(p) = self.pools[kind.index()].try_place(class, size) {
                return Ok(p);
            }
            match self.grow(backend, kind, class, (requested, size), on) {
                Err(e) if is_refusal(&e) => {}
                other => return other,
            }
        }
        if let Some(p) = self.pools[kind.index()].try_place(other, size) {
            return Ok(p);
        }
        let unit = self.settings.geometry.unit;
        let beyond = if backend.resizable(kind) {
            self.budget.headroom(self.counters.reserved) / unit * unit
        } else {
            0
        };
        if let Some(p) = self.compact_into_window(backend, kind, None, size, beyond)? {
            return Ok(p);
        }
        // The free ranges are too scattered: gather each block's at its end, then try again.
        if let Some(p) = self.slide_and_place(backend, kind, class, size, beyond, true)? {
            return Ok(p);
        }
        if backend.resizable(kind) {
            match self.grow(backend, kind, class, (requested, size), on) {
                Err(e) if is_refusal(&e) => {}
                other => return other,
            }
        }
        if self
            .evacuate(backend, kind, Goal::Room(size), c.max_pass_bytes)?
            .blocks_freed
            > 0
        {
            match self.grow(backend, kind, class, (requested, size), on) {
                Err(e) if is_refusal(&e) => {}
                other => return other,
            }
        }
        Err(match refusal {
            Error::OverBudget { .. } => self.over_budget(backend, kind, requested),
            e => e,
        })
    }

    /// Whether growing for `size` bytes would take the pool's reserved bytes past the slack
    /// over its peak in use (this request included) while its free ranges could make up the
    /// difference (see [`CompactionDesc::slack_permille`]). A segment grows by what its end
    /// lacks; a pool of fixed blocks by a whole block, and only when the free ranges add up to
    /// the request can they spare it.
    fn growth_past_slack(&self, kind: MemoryKind, size: u64, resizable: bool) -> bool {
        let pool = &self.pools[kind.index()];
        let free = pool.free_total();
        let g = &self.settings.geometry;
        let growth = match (resizable, pool.segment()) {
            (true, Some(seg)) => size
                .saturating_sub(pool.tail_free(seg))
                .next_multiple_of(g.granule),
            (true, None) => size.next_multiple_of(g.granule),
            (false, _) if free < size => return false,
            (false, _) => {
                let headroom = self.budget.headroom(self.counters.reserved);
                g.new_block(size, headroom).unwrap_or(size)
            }
        };
        let room = self.slack_room(kind, size);
        growth > room && free >= growth - room
    }

    /// Bytes the pool may still grow by within the slack over its peak in use, a request of
    /// `size` bytes included.
    fn slack_room(&self, kind: MemoryKind, size: u64) -> u64 {
        let k = &self.counters.kinds[kind.index()];
        let peak = u128::from(self.counters.most_in_use(kind).max(k.in_use + size));
        let slack = u128::from(self.settings.compaction.slack_permille);
        let allowed = (peak * (1000 + slack) / 1000) as u64;
        let room = allowed
            .saturating_sub(k.reserved)
            .min(self.budget.headroom(self.counters.reserved));
        room / self.settings.geometry.unit * self.settings.geometry.unit
    }

    /// Whether `p` (just placed) took an empty cached block that, under a budget, is larger
    /// than the block the geometry would make for it.
    fn oversized_cache_hit(&self, p: &Placement, kind: MemoryKind, size: u64) -> bool {
        if self.budget.as_option().is_none() {
            return false;
        }
        let Some(blk) = self.pools[kind.index()].block(p.block) else {
            return false;
        };
        let headroom = self.budget.headroom(self.counters.reserved) + blk.size;
        // A segment is shared by every size and shrinks by its tail instead.
        !blk.segment
            && blk.live == 1
            && self
                .settings
                .geometry
                .new_block(size, headroom)
                .is_some_and(|want| want < blk.size)
    }

    /// Slides so that a request of `size` bytes fits: in a pool of fixed blocks, the cheapest
    /// block that can gather it at its end; in a pool of segments, the request's class segment,
    /// gathering all it can up to what the segment may not grow by (`beyond`), which then grows
    /// by what its end still lacks. `None` when it still does not fit (or a segment would have to
    /// grow past `beyond` while `strict`).
    fn slide_and_place(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        class: Class,
        size: u64,
        beyond: u64,
        strict: bool,
    ) -> Result<Option<Placement>> {
        let max = self.settings.compaction.max_pass_bytes;
        let pool = &self.pools[kind.index()];
        let seg = pool.segment().filter(|_| backend.resizable(kind));
        let Some(seg) = seg else {
            if self.slide(backend, kind, max, Some(size), None)? == 0 {
                return Ok(None);
            }
            let other = match class {
                Class::Small => Class::Large,
                Class::Large => Class::Small,
            };
            let pool = &mut self.pools[kind.index()];
            return Ok(pool
                .try_place(class, size)
                .or_else(|| pool.try_place(other, size)));
        };
        let free = pool.block(seg).map_or(0, |b| b.size - b.used);
        let want = size.saturating_sub(beyond).min(free).max(1);
        self.slide(backend, kind, max, Some(want), Some(seg))?;
        let pool = &mut self.pools[kind.index()];
        if let Some(p) = pool.try_place(class, size) {
            return Ok(Some(p));
        }
        let need = size - pool.tail_free(seg).min(size);
        if strict && need > beyond {
            return Ok(None);
        }
        let g = self.settings.geometry;
        let headroom = self.budget.headroom(self.counters.reserved) / g.unit * g.unit;
        if need > headroom {
            return Ok(None);
        }
        let extra = need.next_multiple_of(g.granule).min(headroom).max(need);
        self.extend_segment(backend, kind, seg, extra)?;
        let pool = &mut self.pools[kind.index()];
        let last = pool.block(seg).map_or(NIL, |b| b.last);
        Ok(Some(pool.take(last, size)))
    }

    /// Makes a new block for the request within the budget and places it there.
    fn grow(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        class: Class,
        (requested, size): (u64, u64),
        on: Option<ForeignStream>,
    ) -> Result<Placement> {
        let headroom = self.budget.headroom(self.counters.reserved);
        let resizable = backend.resizable(kind);
        if let (true, Some(seg)) = (resizable, self.pools[kind.index()].segment()) {
            return self.grow_segment(backend, kind, seg, (requested, size, headroom), on);
        }
        let g = &self.settings.geometry;
        let block = if resizable {
            self.growth_step(backend, kind, 0, size, headroom)
        } else {
            g.new_block(size, headroom)
        };
        let Some(mut block) = block else {
            return Err(self.over_budget(backend, kind, requested));
        };
        let start = Instant::now();
        let made = match backend.alloc_block(block, kind) {
            Ok(raw) => Ok(raw),
            // A block larger than the request that the device refuses: one of the request's
            // size may still fit (as `fits_now` and `largest_alloc` promise).
            Err(e) if is_refusal(&e) && block > size => {
                block = size;
                backend.alloc_block(block, kind)
            }
            Err(e) => Err(e),
        };
        self.emit(DriverCall::Grow.since(start));
        let raw = made?;
        // The backend may clear a new block on its own queue: other streams wait for that, and
        // its pages go back only after it.
        self.streams.on_release(StreamRef::Own);
        self.pools[kind.index()].stamp = self.streams.seq;
        log::debug!("vramkit: new {kind:?} block of {block} B ({class:?})");
        self.emit(Change::BlockMade {
            kind,
            bytes: block,
            label: None,
        });
        let pool = &mut self.pools[kind.index()];
        let class = if resizable { Class::Large } else { class };
        let b = pool.add_block(raw, block, class, resizable);
        let first = pool.block(b).map(|blk| blk.first);
        match first {
            Some(first) => Ok(pool.take(first, size)),
            None => Err(Error::Internal {
                message: format!("a fresh {block}-byte block went missing"),
            }),
        }
    }

    /// How much a segment of `size` bytes grows when it lacks `need` bytes: in proportion to
    /// it, or just what is needed where free memory goes back as it appears
    /// ([`follow_live`](crate::ContextDesc::follow_live) or a release threshold), so that no
    /// step leaves memory unused.
    fn growth_step(
        &self,
        backend: &B,
        kind: MemoryKind,
        size: u64,
        need: u64,
        headroom: u64,
    ) -> Option<u64> {
        let g = &self.settings.geometry;
        match backend.page_grid(kind) {
            Some(grid)
                if self.settings.follow_live || self.settings.release_threshold != u64::MAX =>
            {
                let step = grid_step(g, Some(grid), size, need, headroom)?;
                // Under a release threshold, memory grown ahead would count as free past it.
                if !self.settings.follow_live || self.settings.release_threshold != u64::MAX {
                    return Some(step);
                }
                // A growth costs the driver's mapping calls whatever its size: following the
                // live set, it takes up to the part of the slack kept without waiting more,
                // where the slack over the peak in use still allows (whole pages), so that the
                // requests of a growing step do not each grow the segment.
                let k = &self.counters.kinds[kind.index()];
                let most = self.counters.most_in_use(kind);
                let (soft, slack) = self.page_slack(most.max(k.in_use + need));
                let room = self.slack_room(kind, need).saturating_sub(slack - soft);
                let ahead_end =
                    grid.floor(size.saturating_add(room.min(step.saturating_add(soft))));
                let ahead = ahead_end.saturating_sub(size);
                Some(step.max(ahead.min(headroom / g.unit * g.unit)))
            }
            _ => g.segment_step(size, need, headroom),
        }
    }

    /// Grows segment `seg` in place by what the request lacks at its end, and places it there.
    fn grow_segment(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        seg: u32,
        (requested, size, headroom): (u64, u64, u64),
        on: Option<ForeignStream>,
    ) -> Result<Placement> {
        let pool = &self.pools[kind.index()];
        let need = size.saturating_sub(pool.tail_free(seg));
        let seg_size = pool.block(seg).map_or(0, |b| b.size);
        let Some(extra) = self.growth_step(backend, kind, seg_size, need, headroom) else {
            return Err(self.over_budget(backend, kind, requested));
        };
        let Some(blk) = pool.block(seg) else {
            return Err(Error::Internal {
                message: "a pool lost its segment".into(),
            });
        };
        let new_size = blk.size + extra;
        if new_size > self.settings.geometry.max_block {
            return Err(Error::OutOfMemory {
                requested,
                kind,
                detail: format!(
                    "the segment would pass the largest block the device makes ({} bytes)",
                    self.settings.geometry.max_block
                ),
            });
        }
        // The request will take the end (its free last chunk, then the new bytes): free pages
        // elsewhere may go back first.
        let start = seg_size - self.pools[kind.index()].tail_free(seg);
        let end = Placement {
            block: seg,
            offset: start,
            size,
            chunk: NIL,
        };
        // Where pages move, the new end comes without memory and is mapped as pages given
        // back are: free pages that would go back move there first.
        if let Some(grown) = self.grow_without_memory(backend, kind, &end, extra, on) {
            grown?;
        } else {
            self.before_mapping(backend, kind, extra, size, Some(&end))?;
            if let Err(e) = self.extend_segment(backend, kind, seg, extra) {
                // A step larger than the request that the device refuses: what the request
                // lacks may still fit (as `fits_now` and `largest_alloc` promise).
                let g = self.settings.geometry;
                match grid_step(&g, backend.page_grid(kind), seg_size, need, headroom) {
                    Some(exact) if exact < extra && is_refusal(&e) => {
                        self.extend_segment(backend, kind, seg, exact)?
                    }
                    _ => return Err(e),
                }
            }
        }
        let pool = &mut self.pools[kind.index()];
        let last = pool.block(seg).map_or(NIL, |b| b.last);
        Ok(pool.take(last, size))
    }

    /// Grows segment `seg` by `extra` bytes at its end.
    pub(crate) fn extend_segment(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        seg: u32,
        extra: u64,
    ) -> Result<()> {
        // Pages mapped again since the caller measured the budget count too.
        if extra > self.budget.headroom(self.counters.reserved) {
            return Err(self.over_budget(backend, kind, extra));
        }
        let Some(blk) = self.pools[kind.index()].block(seg) else {
            return Ok(());
        };
        let new_size = blk.size + extra;
        let start = Instant::now();
        let grown = backend.grow_block(&blk.raw, new_size);
        self.emit(DriverCall::Grow.since(start));
        grown?;
        // The growth's clear on vramkit's own queue: as a new block's.
        self.streams.on_release(StreamRef::Own);
        self.pools[kind.index()].stamp = self.streams.seq;
        log::debug!("vramkit: {kind:?} segment grew by {extra} B to {new_size} B");
        self.emit(Change::SegmentGrown { kind, bytes: extra });
        self.pools[kind.index()].extend(seg, extra);
        Ok(())
    }

    pub(super) fn over_budget(&self, backend: &B, kind: MemoryKind, requested: u64) -> Error {
        let (_, largest_free) = self.pools[kind.index()].free_space();
        Error::OverBudget {
            requested,
            limit: self.budget.limit,
            in_use: self.counters.in_use,
            reserved: self.counters.reserved,
            largest_free,
            // What `largest_alloc` says: the device's free memory, the block sizes and pages
            // given back counted, so that many bytes are then allocated at once.
            fits_now: self.largest_now(backend, kind, 0),
        }
    }
}

/// What a segment of `size` bytes grows by to hold `need` bytes more: whole pages of `grid`
/// at its end (its new end on a page boundary, so that every page it maps is counted), or
/// whole units without pages, within `headroom`. `None` where `need` passes the headroom.
fn grid_step(
    g: &Geometry,
    grid: Option<PageGrid>,
    size: u64,
    need: u64,
    headroom: u64,
) -> Option<u64> {
    let step = g.exact_step(need, g.unit, headroom)?;
    let Some(grid) = grid else {
        return Some(step);
    };
    let to_boundary = grid.ceil(size.saturating_add(step)).saturating_sub(size);
    Some(to_boundary.min(headroom / g.unit * g.unit).max(step))
}
