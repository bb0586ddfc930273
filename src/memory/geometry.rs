//! Block sizes: how big a block the pool asks the device for when no free range fits.
//!
//! Tuned on real training and inference traces (`benches/traces/`), after PyTorch's caching
//! allocator: requests up to 1 MiB share 2 MiB blocks (the *small* class, kept apart so that
//! small long-lived tensors do not pin large blocks), requests up to 10 MiB share 20 MiB blocks,
//! and larger requests get a block of their own size rounded up to 2 MiB. Blocks are cached
//! when they empty and are split for smaller requests of their class, so "a block of its own"
//! lasts beyond the allocation it was made for. A new block never takes more than half the room
//! the budget leaves unless the request itself needs more, so one pool does not starve the
//! others or the staging ring.

/// Which free index a request (and a block) belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Small = 0,
    Large = 1,
}

/// Pool geometry, derived from the backend's limits and the context's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    /// Bytes per sub-allocation unit (the offset alignment; a power of two).
    pub unit: u64,
    /// Blocks of the small class.
    pub small_block: u64,
    /// Requests up to this are small.
    pub small_max: u64,
    /// Blocks shared by medium requests.
    pub mid_block: u64,
    /// Requests up to this are medium.
    pub mid_max: u64,
    /// Larger requests get blocks of their size rounded up to this.
    pub granule: u64,
    /// The largest block the device makes.
    pub max_block: u64,
}

impl Geometry {
    /// The geometry for blocks of at most `max_block` bytes, aligned to `unit`, with medium
    /// blocks of `mid_block` bytes (default 20 MiB).
    pub fn new(unit: u64, max_block: u64, mid_block: Option<u64>) -> Self {
        let unit = unit.max(4).next_power_of_two();
        let fit = |b: u64| (b.min(max_block) / unit * unit).max(unit);
        // At most 1 GiB: a segment grows by at least one medium block.
        let mid_block = fit(mid_block.unwrap_or(20 << 20).min(1 << 30));
        let small_block = fit((2 << 20).min(mid_block));
        Self {
            unit,
            small_block,
            small_max: small_block / 2,
            mid_block,
            mid_max: mid_block / 2,
            granule: small_block,
            max_block,
        }
    }

    /// The class of a request of `size` bytes.
    #[inline]
    pub fn class(&self, size: u64) -> Class {
        if size <= self.small_max {
            Class::Small
        } else {
            Class::Large
        }
    }

    /// The block to make for a request of `size` bytes (a multiple of the unit) when `headroom`
    /// bytes may still be reserved, or `None` when not even the request fits.
    #[inline]
    pub fn new_block(&self, size: u64, headroom: u64) -> Option<u64> {
        if size > headroom || size > self.max_block {
            return None;
        }
        let want = if size <= self.small_max {
            self.small_block
        } else if size <= self.mid_max {
            self.mid_block
        } else {
            size.next_multiple_of(self.granule).min(self.max_block)
        };
        Some(want.min(headroom / 2 / self.unit * self.unit).max(size))
    }

    /// How much a segment of `size` bytes grows when it lacks `need` bytes at its end: at
    /// least `need`, and at least 1/64 of the segment, between a medium block (20 MiB) and
    /// 256 MiB, rounded up to the granule; just `need` where the budget leaves no more; `None`
    /// when not even that. Steps in proportion to the segment keep the device allocations few
    /// while a pool grows (tuned on `benches/traces/`: fewer than PyTorch's segments on each),
    /// and cost little at its peak: what a step leaves unused is at most 1.6 % of the segment,
    /// and compaction gathers free space at the end before the next step.
    #[inline]
    pub fn segment_step(&self, size: u64, need: u64, headroom: u64) -> Option<u64> {
        let need = need.next_multiple_of(self.unit);
        if need > headroom {
            return None;
        }
        let step = (size / 64).min(256 << 20).max(self.mid_block);
        let want = need.max(step).next_multiple_of(self.granule);
        Some(want.min(headroom / self.unit * self.unit))
    }

    /// The growth of a segment that keeps its memory close to what is in use: just `need`,
    /// rounded up to whole pages of `page` bytes (to the unit where the budget leaves no
    /// more); `None` when not even that fits.
    #[inline]
    pub fn exact_step(&self, need: u64, page: u64, headroom: u64) -> Option<u64> {
        let need = need.next_multiple_of(self.unit);
        if need > headroom {
            return None;
        }
        Some(
            need.next_multiple_of(page)
                .min(headroom / self.unit * self.unit),
        )
    }

    /// How many items of `item` bytes (a multiple of the unit) new blocks could hold within
    /// `headroom`, blocks made by [`new_block`](Self::new_block) one after another.
    pub fn items_in_new_blocks(&self, mut headroom: u64, item: u64) -> u64 {
        let mut n = 0u64;
        while let Some(block) = self.new_block(item, headroom) {
            // While two blocks' room remains the block size does not change: take all but
            // those at once, so an unlimited budget costs a few steps, not one per block.
            let k = (headroom / block).saturating_sub(2).max(1);
            n = n.saturating_add(k.saturating_mul(block / item));
            headroom -= k * block;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::Geometry;

    /// The growth rule applied one block at a time.
    fn one_by_one(g: &Geometry, mut headroom: u64, item: u64) -> u64 {
        let mut n = 0;
        while let Some(block) = g.new_block(item, headroom) {
            n += block / item;
            headroom -= block;
        }
        n
    }

    #[test]
    fn closed_form_counts_what_block_by_block_growth_counts() {
        for g in [
            Geometry::new(256, 1 << 40, None),
            Geometry::new(256, 1 << 40, Some(1 << 20)),
            Geometry::new(256, 128 << 20, Some(64 << 20)),
        ] {
            let items = [
                256u64,
                4096,
                100 << 10,
                1 << 20,
                5 << 20,
                16 << 20,
                40 << 20,
            ];
            let rooms = [
                0u64,
                255,
                1 << 20,
                3 << 20,
                100 << 20,
                1 << 30,
                5_000_000_123,
            ];
            for item in items {
                let item = item.next_multiple_of(g.unit);
                for headroom in rooms {
                    assert_eq!(
                        g.items_in_new_blocks(headroom, item),
                        one_by_one(&g, headroom, item),
                        "item {item}, headroom {headroom}, {g:?}"
                    );
                }
            }
            // An unlimited budget is a few steps, not one per block.
            let n = g.items_in_new_blocks(u64::MAX, 256);
            assert!(n > 1 << 50, "{n}");
        }
    }

    #[test]
    fn blocks_follow_the_classes() {
        let g = Geometry::new(256, 1 << 40, None);
        let mib = 1 << 20;
        assert_eq!(g.new_block(512, u64::MAX), Some(2 * mib));
        assert_eq!(g.new_block(mib, u64::MAX), Some(2 * mib));
        assert_eq!(g.new_block(mib + 256, u64::MAX), Some(20 * mib));
        assert_eq!(g.new_block(10 * mib, u64::MAX), Some(20 * mib));
        assert_eq!(g.new_block(10 * mib + 256, u64::MAX), Some(12 * mib));
        assert_eq!(g.new_block(33_177_600, u64::MAX), Some(32 * mib));
        // Near the budget: half the room, or the request itself.
        assert_eq!(g.new_block(mib, 3 * mib), Some(3 * mib / 2));
        assert_eq!(g.new_block(33_177_600, 40 * mib), Some(33_177_600));
        assert_eq!(g.new_block(33_177_600, 33_177_599), None);
    }
}
