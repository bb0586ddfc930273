//! Free pages that may go, and moving them where a request needs memory: where the backend
//! can move pages ([`Storage::move_pages`]), a request whose place was given back takes the
//! physical pages of free ranges that would otherwise go back to make room for it, so memory
//! held follows the live set without the driver giving memory back and mapping new memory
//! again.
//!
//! [`Storage::move_pages`]: crate::backend::Storage::move_pages

use std::ops::Range;
use std::time::Instant;

use super::super::pool::Placement;
use super::emit::{Change, DriverCall};
use super::Manager;
use crate::backend::{ForeignStream, PageGrid, Storage, StreamRef};
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

/// Which free pages [`Manager::donor_pages`] may give.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Donors {
    /// Those no work may still use (polling, no wait).
    Passed,
    /// All, after waiting for every stream and the blocks' own work.
    Waited,
    /// Those no work but a foreign stream's may still use (polling the rest): pages to move
    /// to a request on that stream, whose order keeps its new work after the old.
    Behind(ForeignStream),
}

impl<B: Storage> Manager<B> {
    /// Free mapped pages of `kind` that may go now, up to `want` bytes (whole pages, the
    /// last piece rounded up to a page), largest free range first, not those of `keep`. Nothing
    /// may still use them: other streams' work on memory released here and the blocks' own;
    /// without `wait`, only pages they have finished with are given: free ranges freed before
    /// the oldest release some stream has not passed yet (`Streams::horizon`), in blocks whose
    /// own work finished; with [`Donors::Behind`], where every other stream passed its
    /// releases, also those freed later (on that stream). With `sizes`, only pages no larger
    /// than the largest of them, largest first (a page moves to a place of its size or inside
    /// a larger page: these are the ones a move can use).
    pub(super) fn donor_pages(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        want: u64,
        keep: Option<&Placement>,
        donors: Donors,
        sizes: &[u64],
    ) -> Result<Vec<(u32, Range<u64>)>> {
        let wait = donors == Donors::Waited;
        let Some(grid) = backend.page_grid(kind) else {
            return Ok(Vec::new());
        };
        if want == 0 {
            return Ok(Vec::new());
        }
        // Where a stream has not passed all its releases, only ranges freed before the oldest
        // of those may go (waiting, every stream passes them all).
        let mut horizon = u64::MAX;
        if self.streams.active {
            if let Donors::Behind(s) = donors {
                if !self
                    .streams
                    .settle(backend, Some(StreamRef::Foreign(s)), false)?
                {
                    return Ok(Vec::new());
                }
            } else {
                let before = self.streams.waited;
                let passed = self.streams.settle(backend, None, wait)?;
                let waited = self.streams.waited.saturating_sub(before);
                self.streams.waited_for_pages += waited;
                if !passed {
                    horizon = self.streams.horizon();
                }
            }
        }
        let mut candidates = self.pools[kind.index()].unmappable(grid, horizon);
        if let Some(k) = keep {
            let w = grid.floor(k.offset)..grid.ceil(k.offset + k.size);
            candidates.retain(|(b, r)| *b != k.block || r.end <= w.start || w.end <= r.start);
        }
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(&largest) = sizes.iter().max() {
            // A page lands in a place of its size or inside a larger page: the largest pages
            // first (fewer calls), each size in the order found.
            candidates = candidates
                .into_iter()
                .flat_map(|(b, r)| grid.regions(r).map(move |x| (b, x)))
                .filter(|(_, r)| grid.size_at(r.start) <= largest)
                .collect();
            candidates.sort_by_key(|(_, r)| std::cmp::Reverse(grid.size_at(r.start)));
        }
        let mut out = Vec::new();
        let mut given = 0;
        for (b, r) in candidates {
            if given >= want {
                break;
            }
            let len = r.end - r.start;
            // Whole pages, at most what is still wanted (rounded up to a page).
            let rest = want - given;
            let take = if rest >= len {
                len
            } else {
                grid.ceil(r.start + rest).min(r.end) - r.start
            };
            if take == 0 {
                continue;
            }
            let Some(blk) = self.pools[kind.index()].block(b) else {
                continue;
            };
            if blk.fence != 0 {
                if wait {
                    backend.wait(blk.fence)?;
                } else if !backend.is_done(blk.fence)? {
                    continue;
                }
            }
            out.push((b, r.start..r.start + take));
            given += take;
        }
        Ok(out)
    }

    /// Moves free pages that mapping `ranges` of `p`'s block would give back (see
    /// [`page_excess`](Self::page_excess)) into those ranges, where the backend moves pages:
    /// those whose work has finished, and past the hard limit the rest after a wait, as
    /// [`before_mapping`](Self::before_mapping) would give them back. Returns the ranges still
    /// to map.
    ///
    /// # Errors
    /// The driver's; the ranges not moved are then given back again, and the pages of the
    /// failed move are given back too (counted so).
    pub(super) fn move_for(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        ranges: Vec<Range<u64>>,
        request: u64,
        p: &Placement,
        on: Option<ForeignStream>,
    ) -> Result<Vec<Range<u64>>> {
        if !backend.moves_pages() {
            return Ok(ranges);
        }
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let (excess, must) = self.page_excess(kind, bytes, request);
        // The page sizes the ranges hold: donors no larger than those.
        let mut sizes: Vec<u64> = match backend.page_grid(kind) {
            Some(g) => ranges
                .iter()
                .flat_map(|r| g.regions(r.clone()).map(move |x| g.size_at(x.start)))
                .collect(),
            None => Vec::new(),
        };
        sizes.dedup();
        let soft = excess.min(bytes);
        let donors = match self.donor_pages(backend, kind, soft, Some(p), Donors::Passed, &sizes) {
            Ok(d) => d,
            Err(e) => return Err(self.unmapped_again(kind, p, ranges, e)),
        };
        let to_map = |rs: &[Range<u64>]| rs.iter().map(|r| r.end - r.start).sum::<u64>();
        let mut ranges = self.move_into(backend, kind, donors, ranges, p, None)?;
        // What moved: donors that fit no place left stay where they were.
        let mut found = bytes - to_map(&ranges);
        // Pages the request's own stream freed move without a wait where the backend can
        // leave their old mappings until that stream passes.
        if let Some(s) = on.filter(|_| backend.defers_moves() && found < soft) {
            let want = soft - found;
            let donors =
                match self.donor_pages(backend, kind, want, Some(p), Donors::Behind(s), &sizes) {
                    Ok(d) => d,
                    Err(e) => return Err(self.unmapped_again(kind, p, ranges, e)),
                };
            let before = to_map(&ranges);
            ranges = self.move_into(backend, kind, donors, ranges, p, Some(s))?;
            // What moved: a move the backend declined leaves its donors where they were.
            found += before - to_map(&ranges);
        }
        let rest = must.min(bytes).saturating_sub(found);
        if rest == 0 || ranges.is_empty() {
            return Ok(ranges);
        }
        match self.donor_pages(backend, kind, rest, Some(p), Donors::Waited, &sizes) {
            Ok(donors) => self.move_into(backend, kind, donors, ranges, p, None),
            Err(e) => Err(self.unmapped_again(kind, p, ranges, e)),
        }
    }

    /// Puts `ranges` of `p`'s block back in its record of pages given back (they were taken
    /// for a mapping that fails with `e`); returns `e`.
    fn unmapped_again(
        &mut self,
        kind: MemoryKind,
        p: &Placement,
        ranges: Vec<Range<u64>>,
        e: Error,
    ) -> Error {
        for r in ranges {
            self.pools[kind.index()].put_unmapped(p.block, r);
        }
        e
    }

    /// Moves the pages of `donors` into `ranges` of `p`'s block, each to a place of its own
    /// size or inside a larger page (the page grid), the largest that fits first, until they
    /// run out; a larger page filled in part is mapped for the rest by the caller (one
    /// piece). With `after`, pages that stream's work may
    /// still use at their old places ([`Donors::Behind`]). Returns the ranges still to map.
    fn move_into(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        donors: Vec<(u32, Range<u64>)>,
        ranges: Vec<Range<u64>>,
        p: &Placement,
        after: Option<ForeignStream>,
    ) -> Result<Vec<Range<u64>>> {
        let Some(grid) = backend.page_grid(kind).filter(|_| !donors.is_empty()) else {
            return Ok(ranges);
        };
        // Pieces of one page size each: a page moves whole, to a place of its size or inside
        // a larger page, at an offset that is a multiple of its size (pages lie at multiples
        // of their size, so it never straddles two).
        let mut donors: Vec<(u32, Range<u64>)> = donors
            .into_iter()
            .flat_map(|(b, r)| grid.regions(r).map(move |x| (b, x)))
            .collect();
        let split: Vec<Range<u64>> = ranges.into_iter().flat_map(|r| grid.regions(r)).collect();
        let mut left = Vec::new();
        let mut ranges = split.into_iter();
        'ranges: while let Some(mut r) = ranges.next() {
            let size = grid.size_at(r.start);
            while r.start < r.end {
                let fits = |x: &Range<u64>| {
                    let d = grid.size_at(x.start);
                    x.start < x.end
                        && d <= size
                        && x.start.is_multiple_of(d)
                        && r.start.is_multiple_of(d)
                };
                let Some((b, x)) = donors
                    .iter_mut()
                    .filter(|(_, x)| fits(x))
                    .min_by_key(|(_, x)| std::cmp::Reverse(grid.size_at(x.start)))
                else {
                    break;
                };
                let n = (r.end - r.start).min(x.end - x.start);
                let pool = &self.pools[kind.index()];
                let (Some(src), Some(dst)) = (pool.block(*b), pool.block(p.block)) else {
                    break;
                };
                let start = Instant::now();
                // SAFETY: `x.start .. + n` is whole pages (`donor_pages`) inside a free chunk,
                // mapped, whose work
                // has finished (`donor_pages`), or with `after` whose only unfinished work is
                // that stream's, recorded before (`Donors::Behind`), outside `p`'s pages;
                // `r.start .. + n` lies in pages of `p`'s block that were given back (taken
                // from its record), for the request on `after`; both lie in regions of pages
                // of one size (`regions`), the source's no larger than the destination's, and
                // each source page lands at a multiple of its size (`fits`): inside one page.
                let moved = unsafe {
                    match after {
                        Some(s) => {
                            backend.move_pages_after(&src.raw, x.start, &dst.raw, r.start, n, s)
                        }
                        None => backend.move_pages(&src.raw, x.start, &dst.raw, r.start, n),
                    }
                };
                self.emit(DriverCall::Pages.since(start));
                let b = *b;
                self.pools[kind.index()].put_unmapped(b, x.start..x.start + n);
                x.start += n;
                r.start += n;
                if let Err(e) = moved {
                    // The destination's pages stay given back; the source's went back too,
                    // unless the backend found the ranges not as promised (nothing moved).
                    if matches!(e, Error::Internal { .. }) {
                        self.pools[kind.index()].take_unmapped(
                            b,
                            x.start - n..x.start,
                            PageGrid::fixed(1),
                        );
                        if after.is_some() {
                            // Moving behind the stream is a saving, not a need (its point
                            // could not be recorded, or the stream is being captured): the
                            // rest is mapped as without it.
                            log::debug!("vramkit: no move behind the stream: {e}");
                            left.push(r.start - n..r.end);
                            left.extend(ranges.by_ref());
                            break 'ranges;
                        }
                    } else {
                        self.on_pages(backend, kind, x.start - n..x.start, false);
                    }
                    let rest = std::iter::once(r.start - n..r.end)
                        .chain(left)
                        .chain(ranges);
                    return Err(self.unmapped_again(kind, p, rest.collect(), e));
                }
                let pages = grid.count(x.start - n..x.start);
                self.emit(Change::PagesMoved { bytes: n, pages });
            }
            if r.start < r.end {
                left.push(r);
            }
        }
        // Pieces cut at a region's end that stay to map join again: one mapping call each.
        let mut joined: Vec<Range<u64>> = Vec::with_capacity(left.len());
        for r in left {
            match joined.last_mut() {
                Some(last) if last.end == r.start => last.end = r.end,
                _ => joined.push(r),
            }
        }
        Ok(joined)
    }
}
