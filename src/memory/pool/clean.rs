//! The ranges of a block never handed out: those still read as zeros, so only the rest needs a
//! clear before it is handed out again.

use std::ops::Range;

/// The ranges of a block never handed out, sorted and disjoint. A block is carved from its start,
/// so this holds one or a few ranges: a sorted vector beats a tree on the allocation hot path.
pub(crate) struct CleanRanges(Vec<Range<u64>>);

impl CleanRanges {
    /// A block of `size` bytes, all clean.
    pub fn whole(size: u64) -> Self {
        let mut ranges = Vec::with_capacity(2);
        ranges.push(0..size);
        Self(ranges)
    }

    /// Adds the never-used range `start..end` at the end of a grown block.
    pub fn extend(&mut self, start: u64, end: u64) {
        match self.0.last_mut() {
            Some(r) if r.end == start => r.end = end,
            _ => self.0.push(start..end),
        }
    }

    /// Forgets everything past `size` (the block shrank).
    pub fn truncate(&mut self, size: u64) {
        self.0.retain(|r| r.start < size);
        if let Some(r) = self.0.last_mut() {
            r.end = r.end.min(size);
        }
    }

    /// Removes `range` from the set, calling `dirty` on each part of it that was not in the set.
    #[inline]
    pub fn take(&mut self, range: Range<u64>, mut dirty: impl FnMut(Range<u64>)) {
        // Reuse below every clean range: nothing to update (the common case).
        if self.0.first().is_none_or(|c| range.end <= c.start) {
            dirty(range);
            return;
        }
        let first = self.0.partition_point(|c| c.end <= range.start);
        let mut at = range.start;
        let mut i = first;
        let mut split = None;
        while i < self.0.len() && self.0[i].start < range.end {
            let c = self.0[i].clone();
            if c.start > at {
                dirty(at..c.start);
            }
            at = c.end.min(range.end);
            // Keep what lies outside `range`.
            match (c.start < range.start, c.end > range.end) {
                (true, true) => {
                    self.0[i] = c.start..range.start;
                    split = Some(range.end..c.end);
                    i += 1;
                }
                (true, false) => {
                    self.0[i] = c.start..range.start;
                    i += 1;
                }
                (false, true) => {
                    self.0[i] = range.end..c.end;
                    i += 1;
                }
                (false, false) => {
                    self.0.remove(i);
                }
            }
        }
        if let Some(rest) = split {
            self.0.insert(i, rest);
        }
        if at < range.end {
            dirty(at..range.end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CleanRanges;

    /// Against a bitmap: the dirty parts reported and the ranges kept are exactly right.
    #[test]
    fn clean_ranges_match_a_bitmap() {
        let mut next = crate::memory::pool::xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..200 {
            let size = 1 + next(300);
            let mut set = CleanRanges::whole(size);
            let mut clean = vec![true; size as usize];
            for _ in 0..20 {
                let a = next(size);
                let b = a + 1 + next(size - a);
                let mut reported = vec![false; size as usize];
                set.take(a..b, |r| r.for_each(|i| reported[i as usize] = true));
                for i in a..b {
                    assert_eq!(reported[i as usize], !clean[i as usize], "byte {i}");
                    clean[i as usize] = false;
                }
                let mut kept = vec![false; size as usize];
                for r in &set.0 {
                    assert!(r.start < r.end);
                    r.clone().for_each(|i| kept[i as usize] = true);
                }
                assert!(set.0.windows(2).all(|w| w[0].end <= w[1].start));
                assert_eq!(kept, clean);
            }
        }
    }
}
