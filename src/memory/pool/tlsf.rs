//! The size-ordered free index: free chunks of every block of a pool class in two-level
//! segregated bins (TLSF, Masmano et al. 2004), so that insert and remove are O(1) and finding
//! the best fit is a few bit scans.
//!
//! Sizes are counted in units (the pool's alignment). A size `s < 32` units has a bin of its
//! own; above that, the power of two `2^l <= s` picks the first level and the next five bits of
//! `s` the second, so each bin holds sizes within 1/32 (3 %) of each other. Every chunk of a
//! bin above the request's own bin fits it; the request's own bin is searched for the smallest
//! chunk that fits among its first 8 that do (a bin's sizes differ by at most 3 %). Among
//! candidates the smallest wins, then the one in the oldest block, then the lowest offset:
//! memory packs towards old blocks and low addresses, which leaves new blocks empty enough to
//! give back.

use super::chunks::{Chunks, NIL};

const SL_BITS: u32 = 5;
const SL: usize = 1 << SL_BITS;
/// First levels: enough for any `u64` size in units.
const FL: usize = 64 - SL_BITS as usize + 1;
/// Chunks of one bin compared before taking the best seen.
const SCAN: usize = 8;

pub(crate) struct FreeIndex {
    fl_bitmap: u64,
    sl_bitmap: [u32; FL],
    heads: Box<[[u32; SL]; FL]>,
    /// Free bytes in the index.
    pub bytes: u64,
    /// Free chunks in the index.
    pub count: usize,
    unit_shift: u32,
}

/// The bin of a size in units.
#[inline]
fn bin(units: u64) -> (usize, usize) {
    if units < SL as u64 {
        (0, units as usize)
    } else {
        let l = 63 - units.leading_zeros();
        let fl = (l - SL_BITS + 1) as usize;
        let sl = ((units >> (l - SL_BITS)) as usize) - SL;
        (fl, sl)
    }
}

impl FreeIndex {
    /// An empty index for sizes in multiples of `unit` (a power of two).
    pub fn new(unit: u64) -> Self {
        Self {
            fl_bitmap: 0,
            sl_bitmap: [0; FL],
            heads: Box::new([[NIL; SL]; FL]),
            bytes: 0,
            count: 0,
            unit_shift: unit.trailing_zeros(),
        }
    }

    /// Adds free chunk `id`.
    #[inline]
    pub fn insert(&mut self, chunks: &mut Chunks, id: u32) {
        let size = chunks[id].size;
        self.link(chunks, id, bin(size >> self.unit_shift));
        self.bytes += size;
        self.count += 1;
    }

    /// Takes free chunk `id` out.
    #[inline]
    pub fn remove(&mut self, chunks: &mut Chunks, id: u32) {
        let size = chunks[id].size;
        self.unlink(chunks, id, bin(size >> self.unit_shift));
        self.bytes -= size;
        self.count -= 1;
    }

    /// Free chunk `id` changed size from `old` bytes: it moves to its new bin, if that differs.
    #[inline]
    pub fn resized(&mut self, chunks: &mut Chunks, id: u32, old: u64) {
        let size = chunks[id].size;
        self.bytes = self.bytes - old + size;
        let (from, to) = (bin(old >> self.unit_shift), bin(size >> self.unit_shift));
        if from != to {
            self.unlink(chunks, id, from);
            self.link(chunks, id, to);
        }
    }

    #[inline]
    fn link(&mut self, chunks: &mut Chunks, id: u32, (fl, sl): (usize, usize)) {
        let head = self.heads[fl][sl];
        let c = &mut chunks[id];
        c.free_prev = NIL;
        c.free_next = head;
        if head != NIL {
            chunks[head].free_prev = id;
        }
        self.heads[fl][sl] = id;
        self.fl_bitmap |= 1 << fl;
        self.sl_bitmap[fl] |= 1 << sl;
    }

    #[inline]
    fn unlink(&mut self, chunks: &mut Chunks, id: u32, (fl, sl): (usize, usize)) {
        let c = &chunks[id];
        let (prev, next) = (c.free_prev, c.free_next);
        if prev != NIL {
            chunks[prev].free_next = next;
        } else {
            self.heads[fl][sl] = next;
            if next == NIL {
                self.sl_bitmap[fl] &= !(1 << sl);
                if self.sl_bitmap[fl] == 0 {
                    self.fl_bitmap &= !(1 << fl);
                }
            }
        }
        if next != NIL {
            chunks[next].free_prev = prev;
        }
    }

    /// The best free chunk for `size` bytes (see the module docs), left in the index.
    /// `rank(block)` orders blocks, lowest preferred.
    #[inline]
    pub fn find(&self, chunks: &Chunks, size: u64, rank: impl Fn(u32) -> u64) -> Option<u32> {
        let units = size >> self.unit_shift;
        let (fl, sl) = bin(units);
        // The request's own bin holds sizes within 3 % of it, some smaller.
        if self.sl_bitmap[fl] & (1 << sl) != 0 {
            if let Some(id) = self.best_in(chunks, self.heads[fl][sl], size, &rank) {
                return Some(id);
            }
        }
        // The next non-empty bin above: everything in it fits.
        let above = self.sl_bitmap[fl] & (!0u32).checked_shl(sl as u32 + 1).unwrap_or(0);
        let (fl, sl) = if above != 0 {
            (fl, above.trailing_zeros() as usize)
        } else {
            let higher = self.fl_bitmap & (!0u64).checked_shl(fl as u32 + 1).unwrap_or(0);
            if higher == 0 {
                return None;
            }
            let fl = higher.trailing_zeros() as usize;
            (fl, self.sl_bitmap[fl].trailing_zeros() as usize)
        };
        self.best_in(chunks, self.heads[fl][sl], size, &rank)
    }

    /// The smallest chunk of the list from `head` that holds `size` bytes, among the first
    /// [`SCAN`] that do; ties go to the lower block rank, then the lower offset.
    #[inline]
    fn best_in(
        &self,
        chunks: &Chunks,
        head: u32,
        size: u64,
        rank: &impl Fn(u32) -> u64,
    ) -> Option<u32> {
        let mut best = NIL;
        let mut seen = 0;
        let mut id = head;
        while id != NIL && seen < SCAN {
            let c = &chunks[id];
            if c.size >= size {
                seen += 1;
                if best == NIL {
                    best = id;
                } else {
                    let b = &chunks[best];
                    let better = c.size < b.size
                        || (c.size == b.size
                            && (rank(c.block), c.offset) < (rank(b.block), b.offset));
                    if better {
                        best = id;
                    }
                }
            }
            id = c.free_next;
        }
        (best != NIL).then_some(best)
    }

    /// The first chunk holding `size` bytes, in ascending bins from the request's own (so
    /// near the best fit), that `accept` takes, among the first `limit` that hold it.
    pub fn first_fitting(
        &self,
        chunks: &Chunks,
        size: u64,
        limit: usize,
        mut accept: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        let (mut fl, mut sl) = bin(size >> self.unit_shift);
        let mut seen = 0;
        loop {
            // The next non-empty bin at or above (fl, sl).
            let here = self.sl_bitmap[fl] & (!0u32).checked_shl(sl as u32).unwrap_or(0);
            if here != 0 {
                sl = here.trailing_zeros() as usize;
            } else {
                let higher = self.fl_bitmap & (!0u64).checked_shl(fl as u32 + 1).unwrap_or(0);
                if higher == 0 {
                    return None;
                }
                fl = higher.trailing_zeros() as usize;
                sl = self.sl_bitmap[fl].trailing_zeros() as usize;
            }
            let mut id = self.heads[fl][sl];
            while id != NIL {
                let c = &chunks[id];
                if c.size >= size {
                    if accept(id) {
                        return Some(id);
                    }
                    seen += 1;
                    if seen >= limit {
                        return None;
                    }
                }
                id = c.free_next;
            }
            sl += 1;
            if sl == SL {
                sl = 0;
                fl += 1;
                if fl == FL {
                    return None;
                }
            }
        }
    }

    /// Every chunk in the index, bin by bin (for audits), each with whether its bin is the
    /// one its size maps to.
    pub fn ids(&self, chunks: &Chunks) -> Vec<(u32, bool)> {
        let mut out = Vec::with_capacity(self.count);
        for fl in 0..FL {
            for sl in 0..SL {
                let mut id = self.heads[fl][sl];
                while id != NIL && out.len() <= self.count {
                    out.push((id, bin(chunks[id].size >> self.unit_shift) == (fl, sl)));
                    id = chunks[id].free_next;
                }
            }
        }
        out
    }

    /// The largest free chunk's size, if any: found from the highest non-empty bin.
    pub fn largest(&self, chunks: &Chunks) -> u64 {
        if self.fl_bitmap == 0 {
            return 0;
        }
        let fl = 63 - self.fl_bitmap.leading_zeros() as usize;
        let sl = 31 - self.sl_bitmap[fl].leading_zeros() as usize;
        let mut id = self.heads[fl][sl];
        let mut largest = 0;
        while id != NIL {
            largest = largest.max(chunks[id].size);
            id = chunks[id].free_next;
        }
        largest
    }
}

#[cfg(test)]
mod tests {
    use super::{bin, FreeIndex};
    use crate::memory::pool::chunks::Chunks;

    #[test]
    fn bins_are_monotonic_and_tight() {
        let mut last = (0, 0);
        for units in 1..100_000u64 {
            let b = bin(units);
            assert!(b >= last, "{units}");
            last = b;
        }
        // A bin spans at most 1/32 of its sizes.
        for l in 5..60u32 {
            let lo = 1u64 << l;
            assert_eq!(bin(lo).1, 0);
            assert_eq!(bin(lo + (lo >> 5) - 1), bin(lo));
            assert_ne!(bin(lo + (lo >> 5)), bin(lo));
        }
        assert!(bin(u64::MAX).0 < super::FL);
    }

    /// Against a sorted list: `find` returns a chunk that fits, as small as the smallest that
    /// fits within the bin precision, and never misses when one fits.
    #[test]
    fn find_agrees_with_a_sorted_list() {
        let mut next = crate::memory::pool::xorshift(0x9e37_79b9_7f4a_7c15);
        let unit = 256;
        let mut chunks = Chunks::default();
        let mut index = FreeIndex::new(unit);
        let mut sizes: Vec<(u64, u32)> = Vec::new();
        for round in 0..20_000 {
            if sizes.is_empty() || next(3) != 0 {
                let bits = next(20);
                let size = (1 + next(1 << bits)) * unit;
                let id = chunks.new_free(0, 0, size);
                index.insert(&mut chunks, id);
                sizes.push((size, id));
            } else {
                let i = next(sizes.len() as u64) as usize;
                let (_, id) = sizes.swap_remove(i);
                index.remove(&mut chunks, id);
                chunks.remove(id);
            }
            let bits = next(20);
            let want = (1 + next(1 << bits)) * unit;
            let best = sizes.iter().map(|s| s.0).filter(|&s| s >= want).min();
            match (index.find(&chunks, want, |_| 0), best) {
                (None, None) => {}
                (Some(id), Some(best)) => {
                    let got = chunks[id].size;
                    assert!(got >= want, "round {round}");
                    assert!(
                        got - best <= got / 32 || got == best,
                        "{got} vs best {best}"
                    );
                }
                (got, best) => panic!("round {round}: found {got:?}, best {best:?}"),
            }
            // Walking the bins up from the request's finds every chunk that holds it.
            let first = index.first_fitting(&chunks, want, usize::MAX, |_| true);
            assert_eq!(first.is_some(), best.is_some(), "round {round}");
            assert!(first.is_none_or(|id| chunks[id].size >= want));
            if let Some(&(size, id)) = sizes.iter().find(|s| s.0 >= want) {
                let hit = index.first_fitting(&chunks, want, usize::MAX, |c| c == id);
                assert_eq!(hit, Some(id), "round {round}: {size} for {want}");
            }
            assert_eq!(index.count, sizes.len());
            assert_eq!(index.bytes, sizes.iter().map(|s| s.0).sum::<u64>());
            let largest = sizes.iter().map(|s| s.0).max().unwrap_or(0);
            assert_eq!(index.largest(&chunks), largest);
        }
    }
}
