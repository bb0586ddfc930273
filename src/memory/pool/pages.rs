//! Pages given back inside blocks ([`Storage::unmap_pages`]): a block keeps its addresses and
//! its chunks, and remembers which page-aligned ranges have no memory behind them. They lie in
//! free chunks, except in a placement just taken and not mapped yet: a range is mapped again
//! before any allocation or copy reaches it ([`Pool::take_unmapped`]), and a free chunk's whole
//! pages are what can be given back ([`Pool::unmappable`]). A request that would map pages
//! again first looks for a free range whose pages are all mapped ([`Pool::mapped_fit`]).
//!
//! [`Storage::unmap_pages`]: crate::backend::Storage::unmap_pages

use std::ops::Range;

use super::chunks::State;
use super::{Placement, Pool};
use crate::backend::PageGrid;

/// A block's unmapped ranges, sorted, disjoint and page-aligned, and their bytes.
#[derive(Debug, Default)]
pub(crate) struct Unmapped {
    ranges: Vec<Range<u64>>,
    pub bytes: u64,
}

impl Unmapped {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges, in address order.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// Whether any unmapped range meets `r`.
    pub fn touches(&self, r: Range<u64>) -> bool {
        let at = self.ranges.partition_point(|x| x.end <= r.start);
        self.ranges.get(at).is_some_and(|x| x.start < r.end)
    }

    /// Bytes of unmapped ranges inside `r`.
    pub fn bytes_in(&self, r: Range<u64>) -> u64 {
        let first = self.ranges.partition_point(|x| x.end <= r.start);
        self.ranges[first..]
            .iter()
            .take_while(|x| x.start < r.end)
            .map(|x| x.end.min(r.end) - x.start.max(r.start))
            .sum()
    }

    /// The lowest offset in `within` from which `size` bytes meet no unmapped range.
    pub fn clear_run(&self, within: Range<u64>, size: u64) -> Option<u64> {
        let mut at = within.start;
        let first = self.ranges.partition_point(|x| x.end <= at);
        for x in &self.ranges[first..] {
            if x.start >= at.saturating_add(size) || x.start >= within.end {
                break;
            }
            at = x.end;
        }
        (at.saturating_add(size) <= within.end).then_some(at)
    }

    /// Where in `within` a run of `size` bytes meets the fewest unmapped bytes, and how many:
    /// runs that start at `within`'s start or at the end of an unmapped range, or end at
    /// `within`'s end or at the start of one (the best run is one of those), looking at no more
    /// than `WINDOW_RANGES` unmapped ranges.
    pub fn least_window(&self, within: Range<u64>, size: u64) -> Option<(u64, u64)> {
        if within.end.saturating_sub(within.start) < size {
            return None;
        }
        let first = self.ranges.partition_point(|x| x.end <= within.start);
        let near = self.ranges[first..]
            .iter()
            .take_while(|x| x.start < within.end)
            .take(WINDOW_RANGES);
        let starts = [within.start, within.end - size].into_iter().chain(
            near.flat_map(|x| [Some(x.end), x.start.checked_sub(size)])
                .flatten(),
        );
        starts
            .filter(|&at| at >= within.start && at + size <= within.end)
            .map(|at| (at, self.bytes_in(at..at + size)))
            .min_by_key(|&(at, bytes)| (bytes, at))
    }

    /// Records `r` (disjoint from the ranges held) as unmapped, joining neighbours.
    fn add(&mut self, r: Range<u64>) {
        self.bytes += r.end - r.start;
        let at = self.ranges.partition_point(|x| x.end < r.start);
        let mut r = r;
        let mut end = at;
        while end < self.ranges.len() && self.ranges[end].start <= r.end {
            r.start = r.start.min(self.ranges[end].start);
            r.end = r.end.max(self.ranges[end].end);
            end += 1;
        }
        self.ranges.splice(at..end, [r]);
    }

    /// Removes and returns the parts of the ranges inside `w`: the ranges `w` meets are found
    /// by a binary search, and only they change (at most a head and a tail of them stay).
    fn take(&mut self, w: Range<u64>) -> Vec<Range<u64>> {
        let first = self.ranges.partition_point(|x| x.end <= w.start);
        let last = first + self.ranges[first..].partition_point(|x| x.start < w.end);
        if first == last || w.start >= w.end {
            return Vec::new();
        }
        let head = self.ranges[first].start..w.start;
        let tail = w.end..self.ranges[last - 1].end;
        let out: Vec<Range<u64>> = self.ranges[first..last]
            .iter()
            .map(|x| x.start.max(w.start)..x.end.min(w.end))
            .collect();
        self.bytes -= out.iter().map(|r| r.end - r.start).sum::<u64>();
        let kept = [head, tail].into_iter().filter(|r| r.start < r.end);
        self.ranges.splice(first..last, kept);
        out
    }

    /// Forgets the ranges past `size` (the block shrank there); returns their bytes.
    pub fn cut(&mut self, size: u64) -> u64 {
        let past = self.take(size..u64::MAX);
        past.iter().map(|r| r.end - r.start).sum()
    }
}

/// Unmapped ranges of one free chunk that [`Unmapped::least_window`] looks at.
const WINDOW_RANGES: usize = 16;

impl<Blk> Pool<Blk> {
    /// Takes out of block `b`'s record the unmapped pages that `range` touches (whole pages of
    /// `grid`), to be mapped; they become not clean (new memory holds anything).
    pub fn take_unmapped(&mut self, b: u32, range: Range<u64>, grid: PageGrid) -> Vec<Range<u64>> {
        let Some(blk) = self.block_mut(b) else {
            return Vec::new();
        };
        if blk.unmapped.is_empty() {
            return Vec::new();
        }
        let w = grid.floor(range.start)..grid.ceil(range.end);
        let taken = blk.unmapped.take(w);
        for r in &taken {
            blk.clean.take(r.clone(), |_| {});
        }
        let bytes: u64 = taken.iter().map(|r| r.end - r.start).sum();
        self.unmapped_bytes -= bytes;
        taken
    }

    /// A free chunk holding `size` bytes none of whose pages were given back, and where in the
    /// chunk they start (a multiple of the unit: ranges given back are whole pages): a place
    /// that takes no new memory. Chunks are tried bin by bin from the request's own up (within
    /// a bin, most recently freed first), at most `limit` of those that hold `size` per class
    /// index.
    ///
    /// `held` is a placement taken but not mapped yet, whose unmapped pages are not free.
    pub fn mapped_fit(
        &self,
        size: u64,
        limit: usize,
        held: Option<&Placement>,
    ) -> Option<(u32, u64)> {
        // Free bytes with memory behind them, in all: too few, and no range can hold `size`.
        let free: u64 = self.free.iter().map(|f| f.bytes).sum();
        let unmapped_free = self.unmapped_bytes.saturating_sub(held.map_or(0, |p| {
            self.block(p.block)
                .map_or(0, |b| b.unmapped.bytes_in(p.offset..p.offset + p.size))
        }));
        if free.saturating_sub(unmapped_free) < size {
            return None;
        }
        let mut found = None;
        for index in &self.free {
            let hit = index.first_fitting(&self.chunks, size, limit, |id| {
                let c = &self.chunks[id];
                let at = match self.block(c.block) {
                    Some(blk) => blk.unmapped.clear_run(c.offset..c.end(), size),
                    None => None,
                };
                found = at.map(|at| at - c.offset);
                found.is_some()
            });
            if let (Some(id), Some(skip)) = (hit, found) {
                return Some((id, skip));
            }
        }
        None
    }

    /// Among the `limit` free chunks nearest `size` that hold it (as [`Pool::mapped_fit`]),
    /// the place of `size` bytes that meets the fewest pages given back (within each chunk, as
    /// [`Unmapped::least_window`] finds it): the chunk, where in it the place starts, and the
    /// unmapped bytes it meets.
    pub fn least_unmapped_fit(&self, size: u64, limit: usize) -> Option<(u32, u64, u64)> {
        let mut best: Option<(u32, u64, u64)> = None;
        for index in &self.free {
            index.first_fitting(&self.chunks, size, limit, |id| {
                let c = &self.chunks[id];
                let Some(blk) = self.block(c.block) else {
                    return false;
                };
                // A place in this chunk meets at least what the chunk's unmapped bytes exceed
                // its room by: no better than the best found, it is not searched.
                let floor =
                    (blk.unmapped.bytes_in(c.offset..c.end())).saturating_sub(c.size - size);
                if best.is_some_and(|b| floor >= b.2) {
                    return false;
                }
                if let Some((at, bytes)) = blk.unmapped.least_window(c.offset..c.end(), size) {
                    if best.is_none_or(|b| bytes < b.2) {
                        best = Some((id, at - c.offset, bytes));
                    }
                }
                // Stops at a place that meets none.
                best.is_some_and(|b| b.2 == 0)
            });
        }
        best
    }

    /// Takes `size` bytes from the free range, among the `limit` smallest that hold it, where
    /// they meet the fewest pages given back, if fewer than placement `p` (taken) meets: fewer
    /// pages to map or move.
    pub fn take_least_unmapped(
        &mut self,
        size: u64,
        limit: usize,
        p: &Placement,
    ) -> Option<Placement> {
        let (id, skip, bytes) = self.least_unmapped_fit(size, limit)?;
        let now = self
            .block(p.block)
            .map_or(0, |b| b.unmapped.bytes_in(p.offset..p.offset + p.size));
        if bytes >= now {
            return None;
        }
        Some(self.take_at(id, skip, size))
    }

    /// Takes `size` bytes at `skip` bytes into free chunk `id`.
    pub fn take_at(&mut self, id: u32, skip: u64, size: u64) -> Placement {
        let before = (skip > 0).then(|| self.take(id, skip));
        // Carved from the front, the free rest keeps its id.
        let p = self.take(id, size);
        if let Some(before) = before {
            self.free(before.chunk);
        }
        p
    }

    /// The bytes given back that `size` bytes at the front of free chunk `id` meet.
    pub fn front_unmapped(&self, id: u32, size: u64) -> u64 {
        let c = &self.chunks[id];
        self.block(c.block)
            .map_or(0, |b| b.unmapped.bytes_in(c.offset..c.offset + size))
    }

    /// Whether placement `p` lies in part on pages given back.
    pub fn touches_unmapped(&self, p: &Placement) -> bool {
        self.block(p.block)
            .is_some_and(|blk| blk.unmapped.touches(p.offset..p.offset + p.size))
    }

    /// The most bytes of one free chunk with no page given back (what a request can take
    /// without mapping anything).
    pub fn largest_mapped(&self) -> u64 {
        let mut best = 0;
        for (b, blk) in self.blocks() {
            for id in self.chunks_of(b) {
                let c = &self.chunks[id];
                if c.state != State::Free || c.size <= best {
                    continue;
                }
                let mut at = c.offset;
                for r in blk.unmapped.ranges() {
                    if r.end <= at {
                        continue;
                    }
                    if r.start >= c.end() {
                        break;
                    }
                    best = best.max(r.start.saturating_sub(at));
                    at = r.end;
                }
                best = best.max(c.end().saturating_sub(at));
            }
        }
        best
    }

    /// Records pages given back (or not mapped again after all) in block `b`.
    pub fn put_unmapped(&mut self, b: u32, r: Range<u64>) {
        let bytes = r.end - r.start;
        if let Some(blk) = self.block_mut(b) {
            blk.unmapped.add(r);
            self.unmapped_bytes += bytes;
        }
    }

    /// Forgets block `b`'s unmapped ranges past `size`; returns their bytes.
    pub fn cut_unmapped(&mut self, b: u32, size: u64) -> u64 {
        let cut = self.block_mut(b).map_or(0, |blk| blk.unmapped.cut(size));
        self.unmapped_bytes -= cut;
        cut
    }

    /// The mapped whole pages inside free chunks of segment blocks freed before `horizon` (a
    /// release stamp: `u64::MAX` for all), as (block, range), largest free chunk first.
    pub fn unmappable(&self, grid: PageGrid, horizon: u64) -> Vec<(u32, Range<u64>)> {
        let mut chunks: Vec<(u64, u32, Range<u64>)> = Vec::new();
        for (b, _) in self.blocks().filter(|(_, blk)| blk.segment) {
            for id in self.chunks_of(b) {
                let c = &self.chunks[id];
                if c.state != State::Free || c.freed_at >= horizon {
                    continue;
                }
                let inner = grid.ceil(c.offset)..grid.floor(c.end());
                if inner.start < inner.end {
                    chunks.push((c.size, b, inner));
                }
            }
        }
        chunks.sort_unstable_by_key(|c| std::cmp::Reverse(c.0));
        let mut out = Vec::new();
        for (_, b, inner) in chunks {
            let Some(blk) = self.block(b) else { continue };
            // The parts of `inner` not unmapped yet.
            let mut at = inner.start;
            for x in blk.unmapped.ranges() {
                if x.end <= at || x.start >= inner.end {
                    continue;
                }
                if x.start > at {
                    out.push((b, at..x.start));
                }
                at = at.max(x.end);
            }
            if at < inner.end {
                out.push((b, at..inner.end));
            }
        }
        out
    }

    /// Checks that every unmapped range lies in free chunks of its block.
    pub fn check_unmapped(&self) -> Result<(), String> {
        let mut total = 0;
        for (b, blk) in self.blocks() {
            total += blk.unmapped.bytes;
            for r in blk.unmapped.ranges() {
                let covered: u64 = self
                    .chunks_of(b)
                    .map(|id| &self.chunks[id])
                    .filter(|c| c.state == State::Free)
                    .map(|c| c.end().min(r.end).saturating_sub(c.offset.max(r.start)))
                    .sum();
                if covered != r.end - r.start {
                    return Err(format!(
                        "block {b}: unmapped {r:?} reaches outside free chunks"
                    ));
                }
            }
        }
        if total != self.unmapped_bytes {
            return Err(format!(
                "unmapped bytes: {} kept, {total} recounted",
                self.unmapped_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Unmapped;

    #[test]
    fn ranges_join_split_and_cut() {
        let mut u = Unmapped::default();
        u.add(4..8);
        u.add(0..2);
        u.add(2..4);
        assert_eq!(u.ranges().to_vec(), vec![0..8; 1]);
        u.add(10..12);
        assert_eq!(u.bytes, 10);
        assert_eq!(u.take(3..11), vec![3..8, 10..11]);
        assert_eq!(u.ranges(), &[0..3, 11..12]);
        assert_eq!(u.bytes, 4);
        assert_eq!(u.bytes_in(2..12), 2);
        assert_eq!(u.bytes_in(3..11), 0);
        assert!(u.touches(2..4) && !u.touches(3..11));
        assert_eq!(u.clear_run(0..12, 8), Some(3));
        assert_eq!(u.clear_run(0..12, 9), None);
        assert_eq!(u.cut(1), 3);
        assert_eq!(u.ranges().to_vec(), vec![0..1; 1]);
        assert_eq!(u.bytes, 1);
    }

    /// A seeded xorshift: numbers below `n`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// Adding and taking ranges agrees with a map of every byte.
    #[test]
    fn take_matches_a_byte_map() {
        let mut next = xorshift(0x2545_f491_u64);
        for _ in 0..300 {
            let mut u = Unmapped::default();
            let mut map = [false; 64];
            for _ in 0..20 {
                let a = next(64);
                let b = (a + 1 + next(16)).min(64);
                if next(2) == 0 {
                    // Adds only what is not held, a piece at a time (the ranges are disjoint).
                    for i in a..b {
                        if !map[i as usize] {
                            u.add(i..i + 1);
                            map[i as usize] = true;
                        }
                    }
                } else {
                    let taken = u.take(a..b);
                    let want: Vec<u64> = (a..b).filter(|&i| map[i as usize]).collect();
                    let got: Vec<u64> = taken.iter().flat_map(|r| r.clone()).collect();
                    assert_eq!(got, want, "take {a}..{b}");
                    assert!(taken.windows(2).all(|w| w[0].end < w[1].start));
                    for i in a..b {
                        map[i as usize] = false;
                    }
                }
                let held: Vec<u64> = u.ranges().iter().flat_map(|r| r.clone()).collect();
                let want: Vec<u64> = (0..64).filter(|&i| map[i as usize]).collect();
                assert_eq!(held, want);
                assert_eq!(u.bytes, want.len() as u64);
                // Joined: no two ranges touch.
                assert!(u.ranges().windows(2).all(|w| w[0].end < w[1].start));
            }
        }
    }

    /// The window search finds the fewest unmapped bytes a run can meet, checked against every
    /// unit offset (ranges and sizes on a grid of 4-byte pages, 1-byte units).
    #[test]
    fn least_window_matches_every_offset() {
        let mut next = xorshift(0x9e37_79b9_u64);
        for _ in 0..500 {
            let mut u = Unmapped::default();
            let mut at = next(8) * 4;
            for _ in 0..next(6) {
                let len = (1 + next(4)) * 4;
                u.add(at..at + len);
                at += len + (1 + next(4)) * 4;
            }
            let within = next(8)..40 + next(40);
            let size = 1 + next(40);
            let brute = (within.start..=within.end.saturating_sub(size))
                .filter(|&o| o + size <= within.end)
                .map(|o| u.bytes_in(o..o + size))
                .min();
            let found = u.least_window(within.clone(), size);
            assert_eq!(
                found.map(|f| f.1),
                brute,
                "{:?} in {within:?}, {size}",
                u.ranges()
            );
            if let Some((o, bytes)) = found {
                assert!(o >= within.start && o + size <= within.end);
                assert_eq!(u.bytes_in(o..o + size), bytes);
            }
        }
    }
}
