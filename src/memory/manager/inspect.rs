//! What the manager tells about itself: allocation records, the counters as statistics, the
//! bytes its pools really hold (for audits), and the timeline.

use super::emit::Change;
use super::{Allocation, Manager};
use crate::backend::Storage;
use crate::memory::stats::{DriverTime, MemoryStats};
use crate::memory::trace::{EventKind, Trace};
use crate::memory::{AllocationInfo, BufferHandle};
use crate::types::error::Result;
use crate::types::MemoryKind;

impl<B: Storage> Manager<B> {
    pub fn info(&self, h: BufferHandle) -> Result<AllocationInfo> {
        let a = self.get(h)?;
        Ok(self.info_of(a, false))
    }

    /// What the manager knows of a live allocation; `where_from` resolves its backtrace.
    fn info_of(&self, a: &Allocation, where_from: bool) -> AllocationInfo {
        AllocationInfo {
            label: a.label.clone(),
            tag: self
                .counters
                .tags
                .get(a.tag as usize)
                .map(|t| t.tag.clone())
                .filter(|t| !t.is_empty()),
            kind: a.kind,
            size: a.requested,
            reserved: a.placement.size,
            block: self.pools[a.kind.index()]
                .block(a.placement.block)
                .map_or(u64::MAX, |b| b.seq),
            offset: a.placement.offset,
            dedicated: self.pools[a.kind.index()]
                .block(a.placement.block)
                .is_some_and(|b| b.size == a.placement.size),
            movable: a.movable,
            allocated_at: if where_from {
                a.backtrace.as_ref().map(|b| b.to_string())
            } else {
                None
            },
        }
    }

    /// Live allocations made after allocation number `after` (all: 0), largest first;
    /// `where_from` resolves their backtraces.
    pub fn live_since(&self, after: u64, where_from: bool) -> Vec<AllocationInfo> {
        let mut v: Vec<_> = self
            .allocs
            .values()
            .filter(|a| a.seq > after)
            .map(|a| self.info_of(a, where_from))
            .chain(self.textures_since(after, where_from))
            .collect();
        v.sort_by(|a, b| b.reserved.cmp(&a.reserved).then(a.label.cmp(&b.label)));
        v
    }

    /// Every live allocation, largest first.
    pub fn allocations(&self) -> Vec<AllocationInfo> {
        self.live_since(0, false)
    }

    /// Logs a transfer of `bytes` to or from an allocation, if tracing.
    pub fn record_transfer(&mut self, what: EventKind, h: BufferHandle, bytes: u64) {
        if self.recorder.is_none() {
            return;
        }
        if let Some(a) = self.allocs.get(h.key) {
            let (kind, label) = (a.kind, a.label.clone());
            self.emit(Change::Transfer {
                what,
                kind,
                bytes,
                label: &label,
            });
        }
    }

    /// The timeline so far, if tracing.
    pub fn trace(&self, device: String) -> Option<Trace> {
        self.recorder
            .as_ref()
            .map(|r| r.trace(self.budget.as_option(), device))
    }

    /// The number of allocations made so far.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Every peak set to the figure it follows now
    /// ([`Observe::reset_peaks`](crate::observe::Observe::reset_peaks)).
    pub fn reset_peaks(&mut self) {
        self.counters.reset_peaks();
    }

    /// The counters, with the pools' free space as it is now.
    pub fn stats(&mut self) -> MemoryStats {
        let c = &self.counters;
        let mut kinds = c.kinds.clone();
        let (mut cached_free, mut cached_empty) = (0, 0);
        for kind in MemoryKind::ALL {
            let pool = &self.pools[kind.index()];
            let (free, largest) = pool.free_space();
            let free = free.saturating_sub(pool.unmapped_bytes);
            kinds[kind.index()].free = free;
            kinds[kind.index()].largest_free = largest;
            cached_free += free;
            cached_empty += pool.empty_bytes;
        }
        let mut tags: Vec<_> = c.tags.iter().filter(|t| t.allocated > 0).cloned().collect();
        tags.sort_by(|a, b| b.in_use.cmp(&a.in_use).then(a.tag.cmp(&b.tag)));
        MemoryStats {
            budget: self.budget.as_option(),
            requested: c.requested,
            in_use: c.in_use,
            reserved: c.reserved,
            staging: c.staging.iter().map(|s| s.0).sum(),
            cached_free,
            cached_empty,
            block_allocations: c.block_allocations,
            compaction: c.compaction.clone(),
            pages: c.pages.clone(),
            driver: DriverTime {
                stream_wait: self.streams.waited,
                page_wait: self.streams.waited_for_pages,
                ..c.driver.clone()
            },
            pending_release: self.deferred.bytes
                + self.textures.pending_bytes()
                + self.streams.held_bytes
                + self.leased_bytes(),
            peak_requested: c.peak_requested,
            peak_in_use: c.peak_in_use,
            peak_reserved: c.peak_reserved,
            allocations: c.allocations,
            releases: c.releases,
            live: self.allocs.len() + self.textures.len(),
            peak_live: usize::try_from(c.peak_live).unwrap_or(usize::MAX),
            bytes_allocated: c.bytes_allocated,
            bytes_released: c.bytes_released,
            over_budget_errors: c.over_budget,
            out_of_memory_errors: c.out_of_memory,
            kinds,
            tags,
        }
    }

    /// Bytes of released allocations whose pointers are still leased.
    fn leased_bytes(&self) -> u64 {
        self.leased.values().map(|a| a.placement.size).sum()
    }

    /// Bytes and blocks each pool really holds, staging included: what the counters must say.
    pub fn held(&self) -> [(u64, usize); MemoryKind::COUNT] {
        std::array::from_fn(|i| {
            let (staging, buffers) = self.counters.staging[i];
            let pool = &self.pools[i];
            let bytes: u64 = pool.blocks().map(|(_, b)| b.size - b.unmapped.bytes).sum();
            let (textures, count) = if i == MemoryKind::Texture.index() {
                self.textures.held()
            } else {
                (0, 0)
            };
            (
                bytes + staging + textures,
                pool.blocks().count() + buffers + count,
            )
        })
    }

    /// Re-derives every pool's layout from its chunks and compares it with the pools' and the
    /// manager's records: chunks tile each block without gaps or overlap, no two free chunks
    /// touch (every free range is coalesced), the free index holds exactly the free chunks,
    /// per-block counts and bytes agree, and each used chunk's owner points back at it.
    pub fn check_layout(&self) -> std::result::Result<(), String> {
        for kind in MemoryKind::ALL {
            self.pools[kind.index()]
                .check(|key, chunk| {
                    self.allocs
                        .get(key)
                        .is_some_and(|a| a.kind == kind && a.placement.chunk == chunk)
                })
                .map_err(|e| format!("{kind:?} pool: {e}"))?;
        }
        Ok(())
    }
}
