//! Room within the budget: staging buffers reserved and returned, and how many more items fit.

use super::super::geometry::Class;
use super::compact::Goal;
use super::emit::Change;
use super::Manager;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

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
                self.compact_for_room(backend, size)?;
            }
            if size > self.budget.headroom(self.counters.reserved) {
                return Err(self.over_budget(backend, kind, size));
            }
        }
        let raw = backend.alloc_block(size, kind)?;
        self.emit(Change::Staging {
            kind,
            bytes: size,
            made: true,
        });
        Ok(raw)
    }

    /// Under budget pressure for `bytes` that are not a buffer of a pool (a texture, a staging
    /// buffer): gathers the buffers of the device and unified pools as a buffer request would
    /// (evacuating sparse blocks, then sliding segments and giving their free ends back), until
    /// the budget leaves `bytes` of room. Returns whether memory went back.
    pub(super) fn compact_for_room(&mut self, backend: &B, bytes: u64) -> Result<bool> {
        let before = self.counters.reserved;
        let max = self.settings.compaction.max_pass_bytes;
        for kind in [MemoryKind::Device, MemoryKind::Unified] {
            if self.budget.headroom(self.counters.reserved) >= bytes {
                break;
            }
            self.evacuate(backend, kind, Goal::Room(bytes), max)?;
        }
        if self.budget.headroom(self.counters.reserved) < bytes {
            // Segments: gathered at their ends, which go back.
            self.compact(backend, max)?;
        }
        self.reclaim(backend)?;
        Ok(self.counters.reserved < before)
    }

    /// Returns a staging buffer's bytes to the budget (the caller frees the block).
    pub fn unreserve_staging(&mut self, size: u64, kind: MemoryKind) {
        self.emit(Change::Staging {
            kind,
            bytes: size,
            made: false,
        });
    }

    /// Bytes that may still be reserved, `keep` bytes (staging a transfer will need) left
    /// aside; without a budget, the device's free memory (where the API tells) is the limit.
    fn room(&self, backend: &B, keep: u64) -> u64 {
        let mut headroom = self.budget.headroom(self.counters.reserved);
        if let Some(info) = backend.memory_info() {
            headroom = headroom.min(info.free);
        }
        headroom.saturating_sub(keep)
    }

    /// Whether compaction can gather every free byte of the pool's segment at its end.
    fn gatherable(&self, kind: MemoryKind) -> bool {
        let pool = &self.pools[kind.index()];
        pool.segment()
            .and_then(|s| pool.block(s))
            .is_none_or(|b| b.pinned == 0)
            && pool.free_total() <= self.settings.compaction.max_pass_bytes
    }

    /// The largest single allocation of `kind` that succeeds now, `keep` bytes of the budget
    /// left aside: a whole number of units, at most the largest block.
    pub fn largest_alloc(&mut self, backend: &B, kind: MemoryKind, keep: u64) -> Result<u64> {
        self.collect(backend)?;
        Ok(self.largest_now(backend, kind, keep))
    }

    /// [`largest_alloc`](Self::largest_alloc) without collecting first.
    pub(super) fn largest_now(&self, backend: &B, kind: MemoryKind, keep: u64) -> u64 {
        let g = self.settings.geometry;
        // Under pressure, empty cached blocks go back first (`reclaim`).
        let cached: u64 = self.pools.iter().map(|p| p.empty_bytes).sum();
        let headroom = (self.room(backend, keep) + cached) / g.unit * g.unit;
        let pool = &self.pools[kind.index()];
        let (total_free, largest_free) = pool.free_space();
        // Pages given back are free address space whose memory the budget counts as headroom
        // already: mapping them again takes it.
        let total_free = total_free.saturating_sub(pool.unmapped_bytes);
        let room = self.room(backend, keep);
        // A free range may hold pages given back, which take headroom to map again (whole
        // pages): where they could pass it, count only what lies on mapped pages (a figure
        // that always fits).
        let short = pool.unmapped_bytes > room;
        let largest_free = if short {
            pool.largest_mapped()
        } else {
            largest_free
        };
        let largest = if backend.resizable(kind) {
            // A segment grows by whole pages where growth steps are exact (`growth_step`).
            let exact = self.settings.follow_live || self.settings.release_threshold != u64::MAX;
            // The pages a growth maps are those at the segment's end.
            let end = pool
                .segment()
                .and_then(|s| pool.block(s))
                .map_or(0, |b| b.size);
            // Growing by whole pages: the new end on a page boundary (`grid_step`).
            let headroom = match backend.page_grid(kind) {
                Some(grid) if exact => {
                    grid.floor(end.saturating_add(room)).saturating_sub(end) / g.unit * g.unit
                }
                _ => room / g.unit * g.unit,
            };
            match pool.segment() {
                // Pages the budget cannot map again: only what lies on mapped pages.
                Some(_) if short => largest_free,
                Some(_) if self.gatherable(kind) => total_free + headroom,
                // Growing past the end also maps the end's given-back pages again: both take
                // the headroom.
                Some(seg) => largest_free
                    .max(pool.tail_free(seg).saturating_sub(pool.unmapped_bytes) + headroom),
                None => largest_free.max(headroom),
            }
        } else {
            largest_free.max(headroom)
        };
        largest.min(g.max_block) / g.unit * g.unit
    }

    /// How many more allocations of `item` bytes of `kind` fit now, `keep` bytes of the budget
    /// left aside: in a pool of segments, in all its free bytes (compaction gathers them) and
    /// what the budget lets it grow by; in a pool of fixed blocks, in free ranges and new blocks
    /// within the budget.
    pub fn max_batch(
        &mut self,
        backend: &B,
        item: u64,
        kind: MemoryKind,
        keep: u64,
    ) -> Result<u64> {
        if item == 0 {
            return Err(Error::ZeroSize {
                label: "max_batch".into(),
            });
        }
        self.collect(backend)?;
        let g = self.settings.geometry;
        let size = match item.checked_next_multiple_of(g.unit) {
            Some(size) if size <= g.max_block => size,
            // Larger than the largest block: not one fits.
            _ => return Ok(0),
        };
        let headroom = self.room(backend, keep);
        let gatherable = self.gatherable(kind);
        let pool = &mut self.pools[kind.index()];
        if backend.resizable(kind) {
            let headroom = headroom / g.unit * g.unit;
            if gatherable {
                // Compaction gathers every free byte at the segment's end, which grows; pages
                // given back count in the headroom, not twice.
                return Ok(
                    (pool.free_total().saturating_sub(pool.unmapped_bytes) + headroom) / size,
                );
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
