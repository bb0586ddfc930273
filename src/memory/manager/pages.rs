//! Physical memory that follows the live set without moving anything: free pages inside
//! segments go back to the device ([`Storage::unmap_pages`]) and are mapped again when a
//! request or a compaction copy lands on them.
//!
//! When pages go back:
//! - under pressure (the budget or the device refuses a growth: `reclaim`), every free page;
//! - past the release threshold, the free pages beyond it;
//! - with [`ContextDesc::follow_live`](crate::ContextDesc::follow_live) (the C ABI's setting,
//!   where nothing can move), before new memory is mapped (a growth, or pages mapped again)
//!   that would take the memory held past three quarters of the compaction slack over the most
//!   ever in use: free pages whose work has finished go back first, and past the whole slack
//!   any free pages after a wait, so physical memory never passes the peak of the live set by
//!   more than the slack (and the pages that hold live bytes in part), while free memory below
//!   the peak stays mapped for the next step.
//!
//! Giving pages back waits for every stream's work on memory released there (the manager's
//! streams) and for the blocks' own last work, as a shrink does; mapping them again costs the
//! driver's calls only. Where the backend moves pages, free pages that would go back move to
//! the place being mapped instead (`page_moves.rs`), and with `follow_live` a segment's growth
//! is such a place: its new end comes without memory and is mapped as pages given back are
//! ([`Manager::grow_without_memory`]).
//!
//! [`Storage::unmap_pages`]: crate::backend::Storage::unmap_pages

use std::ops::Range;
use std::time::Instant;

use super::super::pool::Placement;
use super::emit::{Change, DriverCall};
use super::page_moves::Donors;
use super::Manager;
use crate::backend::{ForeignStream, Storage};
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

/// With [`ContextDesc::follow_live`](crate::ContextDesc::follow_live), the share of the
/// compaction slack (in quarters) past which free pages whose work finished go back. Between
/// it and the whole slack, pages are kept until their work finishes; past the whole slack, an
/// allocation waits for the device to give them back. Each page given back costs the driver
/// tens of microseconds now and again when it is mapped again, so the quarter of the slack
/// kept as a margin saves most of the page traffic of a workload whose live set moves.
const SOFT_QUARTERS: u64 = 3;

impl<B: Storage> Manager<B> {
    /// Maps the pages a placement touches that were given back, within the budget (giving
    /// back other free pages first if the budget needs it), for a request on `on` (`None`:
    /// vramkit's own queue).
    ///
    /// # Errors
    /// [`Error::OverBudget`](crate::Error::OverBudget) or the device's out-of-memory; the
    /// pages then stay unmapped.
    pub(crate) fn map_for(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        p: &Placement,
        request: u64,
        on: Option<ForeignStream>,
    ) -> Result<()> {
        let pool = &mut self.pools[kind.index()];
        if pool.unmapped_bytes == 0 {
            return Ok(());
        }
        let Some(grid) = backend.page_grid(kind) else {
            return Ok(());
        };
        let ranges = pool.take_unmapped(p.block, p.offset..p.offset + p.size, grid);
        if ranges.is_empty() {
            return Ok(());
        }
        // Free pages that would go back to make room for these move here instead.
        let ranges = self.move_for(backend, kind, ranges, request, p, on)?;
        if ranges.is_empty() {
            return Ok(());
        }
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let made_room = self.before_mapping(backend, kind, bytes, request, Some(p));
        if made_room.is_ok() && self.budget.headroom(self.counters.reserved) < bytes {
            // Under the budget: other free pages go first.
            let _ = self.unmap_free_pages(backend, kind, bytes, Some(p), true);
        }
        if let Err(e) = made_room {
            for r in ranges {
                self.pools[kind.index()].put_unmapped(p.block, r);
            }
            return Err(e);
        }
        if self.budget.headroom(self.counters.reserved) < bytes {
            for r in ranges {
                self.pools[kind.index()].put_unmapped(p.block, r);
            }
            return Err(self.over_budget(backend, kind, p.size));
        }
        let mut result = Ok(());
        let mut left = ranges.into_iter();
        for r in left.by_ref() {
            let Some(blk) = self.pools[kind.index()].block(p.block) else {
                break;
            };
            let start = Instant::now();
            // SAFETY: `r` is whole pages (or the rest of one that pages moved into fill in
            // part) of the block that were given back (taken from its
            // record of unmapped pages).
            let mapped = unsafe { backend.map_pages(&blk.raw, r.start, r.end - r.start) };
            self.emit(DriverCall::Pages.since(start));
            match mapped {
                Ok(()) => self.on_pages(backend, kind, r, true),
                Err(e) => {
                    self.pools[kind.index()].put_unmapped(p.block, r);
                    result = Err(e);
                    break;
                }
            }
        }
        for r in left {
            self.pools[kind.index()].put_unmapped(p.block, r);
        }
        result
    }

    /// Gives back up to `want` bytes of free pages of `kind` (whole pages in free chunks,
    /// largest free range first), leaving the range of `keep` alone. Returns the bytes given
    /// back.
    pub(crate) fn unmap_free_pages(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        want: u64,
        keep: Option<&Placement>,
        wait: bool,
    ) -> Result<u64> {
        let mut given = 0;
        let donors = if wait { Donors::Waited } else { Donors::Passed };
        for (b, r) in self.donor_pages(backend, kind, want, keep, donors, &[])? {
            let Some(blk) = self.pools[kind.index()].block(b) else {
                continue;
            };
            let take = r.end - r.start;
            let start = Instant::now();
            // SAFETY: `r` is whole pages (ending on the grid or where pages moved into one end)
            // inside a free chunk of the block, mapped (not in its
            // record of unmapped pages); the block's last work and every stream's work on
            // memory released here have finished (`donor_pages`), and free chunks are used by
            // nothing.
            let unmapped = unsafe { backend.unmap_pages(&blk.raw, r.start, take) };
            self.emit(DriverCall::Pages.since(start));
            unmapped?;
            self.pools[kind.index()].put_unmapped(b, r.clone());
            self.on_pages(backend, kind, r, false);
            given += take;
        }
        Ok(given)
    }

    /// Before `bytes` of new memory are mapped for a request of `request` bytes (0: for an
    /// allocation already counted), gives back free pages (not those of `keep`) so that the
    /// free memory afterwards stays within the release threshold and, with
    /// [`ContextDesc::follow_live`](crate::ContextDesc::follow_live), the memory held within
    /// the compaction slack over the most ever in use.
    pub(crate) fn before_mapping(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        bytes: u64,
        request: u64,
        keep: Option<&Placement>,
    ) -> Result<()> {
        let follow = self.settings.follow_live;
        if (!follow && self.settings.release_threshold == u64::MAX)
            || backend.page_grid(kind).is_none()
        {
            return Ok(());
        }
        let (excess, must) = self.page_excess(kind, bytes, request);
        if excess > 0 {
            let given = self.unmap_free_pages(backend, kind, excess, keep, false)?;
            if must > given {
                self.unmap_free_pages(backend, kind, must - given, keep, true)?;
            }
        }
        Ok(())
    }

    /// The free bytes that mapping `bytes` more for a request of `request` bytes would hold
    /// past the release threshold and, with
    /// [`ContextDesc::follow_live`](crate::ContextDesc::follow_live), past the slack over the
    /// most ever in use (those pages go back first, where their work has finished); and past
    /// which they go even after a wait.
    pub(super) fn page_excess(&self, kind: MemoryKind, bytes: u64, request: u64) -> (u64, u64) {
        let k = &self.counters.kinds[kind.index()];
        let in_use = k.in_use + request;
        let after = k.reserved + bytes;
        // Free memory past the release threshold goes first.
        let mut excess = after
            .saturating_sub(in_use)
            .saturating_sub(self.settings.release_threshold);
        // Past this, pages go back even if that means waiting for the device.
        let mut must = excess;
        if self.settings.follow_live {
            // Physical memory stays within the slack over the most ever in use: free memory
            // is kept while in use is below its peak (the next step reuses it), and goes only
            // where the next mapping would pass that. Past `SOFT_QUARTERS` of the slack, only
            // pages whose work has finished go (the host does not wait for the device in an
            // allocation while it can help it: that would stall the program's queue); past the
            // whole slack, the rest go after a wait.
            let peak = self.counters.most_in_use(kind).max(in_use);
            let (soft, slack) = self.page_slack(peak);
            excess = excess.max(after.saturating_sub(peak.saturating_add(soft)));
            must = must.max(after.saturating_sub(peak.saturating_add(slack)));
        }
        (excess, must)
    }

    /// With [`ContextDesc::follow_live`](crate::ContextDesc::follow_live) and `peak` bytes the
    /// most in use: the bytes held past it from which free pages whose work finished go back,
    /// and those past which the rest go after a wait (the compaction slack).
    pub(super) fn page_slack(&self, peak: u64) -> (u64, u64) {
        let slack =
            (peak / 1000).saturating_mul(u64::from(self.settings.compaction.slack_permille));
        (slack / 4 * SOFT_QUARTERS, slack)
    }

    /// After a release under a release threshold: gives back free pages past it, of blocks
    /// whose work has finished (a release never waits for the device). Pages that hold live
    /// bytes in part cannot go; what stayed last time (`page_floor`) spares a search until
    /// more is free.
    pub(crate) fn pages_past_threshold(&mut self, backend: &B, kind: MemoryKind) {
        let keep = self.settings.release_threshold;
        if keep == u64::MAX || backend.page_grid(kind).is_none() {
            return;
        }
        let k = &self.counters.kinds[kind.index()];
        let free = k.reserved.saturating_sub(k.in_use);
        let floor = self.page_floor[kind.index()];
        if free <= keep.saturating_add(floor) {
            return;
        }
        // Streams still running over released memory: nothing goes now, and nothing is
        // learnt about what can go.
        if self.streams.active && !self.streams.settle(backend, None, false).unwrap_or(false) {
            return;
        }
        match self.unmap_free_pages(backend, kind, free - keep, None, false) {
            Ok(given) => {
                self.page_floor[kind.index()] = (free - given).saturating_sub(keep);
            }
            // The release itself succeeded: the error waits for the next call that can fail.
            Err(e) => {
                self.deferred_error.get_or_insert(e);
            }
        }
    }

    /// With [`ContextDesc::follow_live`](crate::ContextDesc::follow_live), where the backend
    /// moves pages: grows the segment of `end` (the free end a request on `on` will take) by
    /// `extra` bytes with no memory behind them ([`Storage::grow_unmapped`]), then maps the end
    /// as pages given back are mapped ([`map_for`](Self::map_for)), so that free pages that
    /// would go back to make room move there instead, and nothing is cleared. `None` where it
    /// cannot (the segment's end off the page grid, or a backend without
    /// [`Storage::grow_unmapped`]), to grow with new memory.
    ///
    /// # Errors
    /// As [`map_for`](Self::map_for); the new end then stays without memory.
    pub(super) fn grow_without_memory(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        end: &Placement,
        extra: u64,
        on: Option<ForeignStream>,
    ) -> Option<Result<()>> {
        if !self.settings.follow_live || !backend.moves_pages() {
            return None;
        }
        let grid = backend.page_grid(kind)?;
        let blk = self.pools[kind.index()].block(end.block)?;
        let old = blk.size;
        let new_size = old.checked_add(extra)?;
        if !grid.is_boundary(old) || !grid.is_boundary(new_size) {
            return None;
        }
        let start = Instant::now();
        let grown = backend.grow_unmapped(&blk.raw, new_size);
        self.emit(DriverCall::Grow.since(start));
        match grown {
            Ok(()) => {}
            Err(e @ (Error::Internal { .. } | Error::Unsupported { .. })) => {
                log::debug!("vramkit: growing with new memory: {e}");
                return None;
            }
            Err(e) => return Some(Err(e)),
        }
        log::debug!("vramkit: {kind:?} segment grew by {extra} B of address to {new_size} B");
        // A growth in the statistics; its memory counts as it is mapped.
        self.emit(Change::SegmentGrown { kind, bytes: 0 });
        let pool = &mut self.pools[kind.index()];
        // Pages moved in may still be used at their old places by work released before now:
        // the new end counts as freed now, so none of it goes or moves again before that work
        // passed.
        pool.stamp = self.streams.seq;
        pool.extend(end.block, extra);
        pool.put_unmapped(end.block, old..new_size);
        let tail = Placement {
            size: new_size - end.offset,
            ..*end
        };
        Some(self.map_for(backend, kind, &tail, end.size, on))
    }

    /// Counts the pages of `r` mapped or given back.
    pub(super) fn on_pages(&mut self, backend: &B, kind: MemoryKind, r: Range<u64>, mapped: bool) {
        let bytes = r.end - r.start;
        let pages = backend.page_grid(kind).map_or(1, |g| g.count(r));
        self.emit(if mapped {
            Change::PagesMapped { kind, bytes, pages }
        } else {
            Change::PagesGivenBack { kind, bytes, pages }
        });
    }
}
