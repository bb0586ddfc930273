//! Blocks of one memory kind, sub-allocated with `offset-allocator` (O(1), TLSF-like).
//!
//! Offsets are counted in units of the backend's offset alignment, so every sub-allocation is
//! bindable. Requests above the dedicated threshold get a block of their own, freed with them.
//! Each block remembers which ranges were never handed out: those still read as zeros, and only
//! the rest needs a clear before reuse.

use rangemap::RangeSet;
use slotmap::SlotMap;

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
    clean: RangeSet<u64>,
    pub live: usize,
}

pub(crate) struct Pool<Blk> {
    pub blocks: SlotMap<BlockKey, PoolBlock<Blk>>,
    /// Bytes per offset-allocator unit.
    unit: u64,
}

impl<Blk> Pool<Blk> {
    pub fn new(unit: u64) -> Self {
        Self {
            blocks: SlotMap::with_key(),
            unit,
        }
    }

    /// Places `size` bytes (a multiple of the unit) in an existing shared block.
    pub fn try_place(&mut self, size: u64) -> Option<Placement> {
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
        let mut clean = RangeSet::new();
        clean.insert(0..size);
        self.blocks.insert(PoolBlock {
            raw,
            size,
            sub,
            clean,
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

    /// Marks a placement as handed out and returns the parts of it that were handed out before
    /// (and so need clearing to read as zeros).
    pub fn take_dirty(&mut self, p: &Placement) -> Vec<std::ops::Range<u64>> {
        let Some(b) = self.blocks.get_mut(p.block) else {
            return Vec::new();
        };
        let range = p.offset..p.offset + p.size;
        let mut dirty = Vec::new();
        let mut at = range.start;
        for clean in b.clean.overlapping(&range) {
            if clean.start > at {
                dirty.push(at..clean.start);
            }
            at = at.max(clean.end);
        }
        if at < range.end {
            dirty.push(at..range.end);
        }
        b.clean.remove(range);
        dirty
    }

    /// Returns a placement to its block. Returns the block itself when it was dedicated (the
    /// caller frees it).
    pub fn free(&mut self, p: Placement) -> Option<PoolBlock<Blk>> {
        let b = self.blocks.get_mut(p.block)?;
        b.live = b.live.saturating_sub(1);
        match (b.sub.as_mut(), p.sub) {
            (Some(alloc), Some(a)) => {
                alloc.free(a);
                None
            }
            _ => self.blocks.remove(p.block),
        }
    }

    /// Removes empty shared blocks, keeping `keep` of them for reuse.
    pub fn take_empty(&mut self, keep: usize) -> Vec<PoolBlock<Blk>> {
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
        let mut total = 0;
        let mut largest = 0;
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
        let mut placed = Vec::new();
        while (placed.len() as u64) < cap {
            match self.try_place(size) {
                Some(p) => placed.push(p),
                None => break,
            }
        }
        let n = placed.len() as u64;
        for p in placed {
            self.free(p);
        }
        n
    }
}
