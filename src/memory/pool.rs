//! Blocks of one memory kind, sub-allocated with `offset-allocator` (O(1), TLSF-like).
//!
//! Offsets are counted in units of the backend's offset alignment, so every sub-allocation is
//! bindable. Requests above the dedicated threshold get a block of their own, freed with them.
//! Each block remembers which ranges were never handed out: those still read as zeros, and only
//! the rest needs a clear before reuse.

use slotmap::SlotMap;

use std::ops::Range;

use super::handle::BlockKey;

/// Where an allocation lives.
#[derive(Clone, Copy)]
pub(crate) struct Placement {
    pub block: BlockKey,
    /// Byte offset inside the block.
    pub offset: u64,
    /// Bytes reserved (the request rounded up to the unit).
    pub size: u64,
    /// The sub-allocation, or `None` for a dedicated block.
    pub sub: Option<offset_allocator::Allocation>,
}

pub(crate) struct PoolBlock<Blk> {
    pub raw: Blk,
    pub size: u64,
    sub: Option<offset_allocator::Allocator>,
    clean: CleanRanges,
    pub live: usize,
}

pub(crate) struct Pool<Blk> {
    pub blocks: SlotMap<BlockKey, PoolBlock<Blk>>,
    /// Bytes per offset-allocator unit.
    unit: u64,
    recycle: Recycle,
}

/// Size classes kept by [`Recycle`], and ranges per class.
const RECYCLE_CLASSES: usize = 16;
const RECYCLE_DEPTH: usize = 8;

/// Recently freed ranges of shared blocks, by size. Programs allocate the same sizes again and
/// again (a loop's buffers, each iteration), and taking a range back from here costs a fraction
/// of the TLSF's allocate + free. The ranges stay allocated in their block's sub-allocator until
/// [`Pool::flush`] returns them: before the pool would grow, and on trim.
#[derive(Default)]
struct Recycle {
    classes: Vec<(u64, Vec<Placement>)>,
    bytes: u64,
}

impl<Blk> Pool<Blk> {
    pub fn new(unit: u64) -> Self {
        Self {
            blocks: SlotMap::with_key(),
            unit,
            recycle: Recycle::default(),
        }
    }

    /// Places `size` bytes (a multiple of the unit) in an existing shared block: a recycled range
    /// of that size, else the sub-allocators, flushing the recycled ranges first if need be.
    pub fn try_place(&mut self, size: u64) -> Option<Placement> {
        if let Some((_, ranges)) = self.recycle.classes.iter_mut().find(|(s, _)| *s == size) {
            if let Some(p) = ranges.pop() {
                self.recycle.bytes -= size;
                return Some(p);
            }
        }
        self.place_fresh(size).or_else(|| {
            if self.recycle.bytes == 0 {
                return None;
            }
            self.flush();
            self.place_fresh(size)
        })
    }

    /// Returns every recycled range to its block's sub-allocator.
    pub fn flush(&mut self) {
        for (_, ranges) in std::mem::take(&mut self.recycle.classes) {
            for p in ranges {
                self.free_now(p);
            }
        }
        self.recycle.bytes = 0;
    }

    fn place_fresh(&mut self, size: u64) -> Option<Placement> {
        let units = u32::try_from(size / self.unit).ok()?;
        let unit = self.unit;
        self.blocks.iter_mut().find_map(|(key, b)| {
            let a = b.sub.as_mut()?.allocate(units)?;
            b.live += 1;
            Some(Placement {
                block: key,
                offset: u64::from(a.offset) * unit,
                size,
                sub: Some(a),
            })
        })
    }

    /// Adds a block. A shared block is sub-allocated; a dedicated one serves one allocation.
    pub fn add_block(&mut self, raw: Blk, size: u64, shared: bool) -> BlockKey {
        let sub = shared.then(|| {
            let units = u32::try_from(size / self.unit).unwrap_or(u32::MAX);
            offset_allocator::Allocator::new(units)
        });
        self.blocks.insert(PoolBlock {
            raw,
            size,
            sub,
            clean: CleanRanges::whole(size),
            live: 0,
        })
    }

    /// Places `size` bytes in block `key` (a dedicated block takes the whole block).
    pub fn place_in(&mut self, key: BlockKey, size: u64) -> Option<Placement> {
        let unit = self.unit;
        let b = self.blocks.get_mut(key)?;
        let (offset, sub) = match b.sub.as_mut() {
            Some(alloc) => {
                let a = alloc.allocate(u32::try_from(size / unit).ok()?)?;
                (u64::from(a.offset) * unit, Some(a))
            }
            None if b.live == 0 && size <= b.size => (0, None),
            None => return None,
        };
        b.live += 1;
        Some(Placement {
            block: key,
            offset,
            size,
            sub,
        })
    }

    /// Marks a placement as handed out and calls `dirty` on the parts of it that were handed out
    /// before (and so need clearing to read as zeros).
    pub fn take_dirty(&mut self, p: &Placement, dirty: impl FnMut(Range<u64>)) {
        if let Some(b) = self.blocks.get_mut(p.block) {
            b.clean.take(p.offset..p.offset + p.size, dirty);
        }
    }

    /// Returns a placement to its pool: a shared range to the recycled ranges while they have
    /// room, else to its block. Returns the block itself when it was dedicated (the caller frees
    /// it); `emptied` tells whether a shared block became empty.
    pub fn free(&mut self, p: Placement) -> (Option<PoolBlock<Blk>>, bool) {
        if p.sub.is_some() {
            let classes = &mut self.recycle.classes;
            let class = match classes.iter().position(|(s, _)| *s == p.size) {
                Some(i) => Some(i),
                None if classes.len() < RECYCLE_CLASSES => {
                    classes.push((p.size, Vec::with_capacity(RECYCLE_DEPTH)));
                    Some(classes.len() - 1)
                }
                None => None,
            };
            if let Some(ranges) = class.map(|i| &mut classes[i].1) {
                if ranges.len() < RECYCLE_DEPTH {
                    ranges.push(p);
                    self.recycle.bytes += p.size;
                    return (None, false);
                }
            }
        }
        self.free_now(p)
    }

    fn free_now(&mut self, p: Placement) -> (Option<PoolBlock<Blk>>, bool) {
        let Some(b) = self.blocks.get_mut(p.block) else {
            return (None, false);
        };
        b.live = b.live.saturating_sub(1);
        match (b.sub.as_mut(), p.sub) {
            (Some(alloc), Some(a)) => {
                alloc.free(a);
                (None, b.live == 0)
            }
            _ => (self.blocks.remove(p.block), false),
        }
    }

    /// Removes empty shared blocks, keeping `keep` of them for reuse. With `keep == 0` the
    /// recycled ranges are flushed first, so every block without live allocations goes.
    pub fn take_empty(&mut self, keep: usize) -> Vec<PoolBlock<Blk>> {
        if keep == 0 {
            self.flush();
        }
        let empty: Vec<BlockKey> = self
            .blocks
            .iter()
            .filter(|(_, b)| b.live == 0)
            .map(|(k, _)| k)
            .skip(keep)
            .collect();
        empty
            .into_iter()
            .filter_map(|k| self.blocks.remove(k))
            .collect()
    }

    /// Bytes in blocks.
    pub fn reserved(&self) -> u64 {
        self.blocks.values().map(|b| b.size).sum()
    }

    /// Total free bytes and the largest free range over the shared blocks.
    pub fn free_space(&self) -> (u64, u64) {
        let mut total = self.recycle.bytes;
        let mut largest = self
            .recycle
            .classes
            .iter()
            .filter(|(_, r)| !r.is_empty())
            .map(|(s, _)| *s)
            .max()
            .unwrap_or(0);
        for b in self.blocks.values() {
            if let Some(alloc) = &b.sub {
                let r = alloc.storage_report();
                total += u64::from(r.total_free_space) * self.unit;
                largest = largest.max(u64::from(r.largest_free_region) * self.unit);
            }
        }
        (total, largest)
    }

    /// How many more allocations of `size` bytes fit in the existing shared blocks (found by
    /// placing them and taking them back), at most `cap`.
    pub fn count_fits(&mut self, size: u64, cap: u64) -> u64 {
        self.flush();
        let mut placed = Vec::new();
        while (placed.len() as u64) < cap {
            match self.try_place(size) {
                Some(p) => placed.push(p),
                None => break,
            }
        }
        let n = placed.len() as u64;
        for p in placed {
            let _ = self.free_now(p);
        }
        n
    }
}

/// The ranges of a block never handed out, sorted and disjoint. A block is carved from its start,
/// so this holds one or a few ranges: a sorted vector beats a tree on the allocation hot path.
struct CleanRanges(Vec<Range<u64>>);

impl CleanRanges {
    /// A block of `size` bytes, all clean.
    fn whole(size: u64) -> Self {
        let mut ranges = Vec::with_capacity(2);
        ranges.push(0..size);
        Self(ranges)
    }

    /// Removes `range` from the set, calling `dirty` on each part of it that was not in the set.
    fn take(&mut self, range: Range<u64>, mut dirty: impl FnMut(Range<u64>)) {
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
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
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
