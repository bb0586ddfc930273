//! Room within the budget: staging buffers reserved and returned, and how many more items fit.

use super::super::geometry::Class;
use super::super::trace::EventKind;
use super::super::Label;
use super::{record, Manager};
use crate::backend::{MemoryKind, Storage};
use crate::error::{Error, Result};

impl<B: Storage> Manager<B> {
    /// Reserves a staging buffer within the budget. A refusal is not counted here: the ring
    /// usually carries on with the slots it has ([`count_error`](Self::count_error) when not).
    pub fn reserve_staging(
        &mut self,
        backend: &B,
        size: u64,
        kind: MemoryKind,
    ) -> Result<B::Block> {
        if size > self.budget.headroom(self.counters.reserved) {
            self.reclaim(backend)?;
            if size > self.budget.headroom(self.counters.reserved) {
                return Err(self.over_budget(kind, size));
            }
        }
        let raw = backend.alloc_block(size, kind)?;
        self.counters.on_reserve(kind, size, true);
        record(
            &mut self.recorder,
            EventKind::StagingGrow,
            kind,
            size,
            size as i64,
            Label::default,
        );
        let s = &mut self.counters.staging[kind.index()];
        s.0 += size;
        s.1 += 1;
        Ok(raw)
    }

    /// Returns a staging buffer's bytes to the budget (the caller frees the block).
    pub fn unreserve_staging(&mut self, size: u64, kind: MemoryKind) {
        self.counters.on_reserve(kind, size, false);
        record(
            &mut self.recorder,
            EventKind::StagingTrim,
            kind,
            size,
            -(size as i64),
            Label::default,
        );
        let s = &mut self.counters.staging[kind.index()];
        s.0 -= size;
        s.1 -= 1;
    }

    /// How many more allocations of `item` bytes of `kind` fit now: in a pool of segments, in
    /// all its free bytes (compaction gathers them) and what the budget lets it grow by; in a
    /// pool of fixed blocks, in free ranges and new blocks within the budget.
    pub fn max_batch(&mut self, backend: &B, item: u64, kind: MemoryKind) -> Result<u64> {
        if item == 0 {
            return Err(Error::ZeroSize {
                label: "max_batch".into(),
            });
        }
        self.collect(backend)?;
        let g = self.settings.geometry;
        let Some(size) = item.checked_next_multiple_of(g.unit) else {
            return Ok(0);
        };
        // Without a budget, the device's free memory (where the API tells) is the limit.
        let mut headroom = self.budget.headroom(self.counters.reserved);
        if let Some(info) = backend.memory_info() {
            headroom = headroom.min(info.free);
        }
        let pool = &mut self.pools[kind.index()];
        if backend.resizable(kind) {
            let headroom = headroom / g.unit * g.unit;
            let gatherable = pool
                .segment()
                .and_then(|s| pool.block(s))
                .is_none_or(|b| b.pinned == 0);
            if gatherable && pool.free_total() <= self.settings.compaction.max_pass_bytes {
                // Compaction gathers every free byte at the segment's end, which grows.
                return Ok((pool.free_total() + headroom) / size);
            }
            let cap = 1 << 20;
            return Ok(pool.count_fits(Class::Large, size, cap) + headroom / size);
        }
        let in_new = g.items_in_new_blocks(headroom, size);
        let cap = 1 << 20;
        let in_pool =
            pool.count_fits(Class::Small, size, cap) + pool.count_fits(Class::Large, size, cap);
        Ok(in_new.saturating_add(in_pool))
    }
}
