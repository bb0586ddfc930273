//! Moves: free ranges found for the allocations of a region to empty, the device copies, and
//! the records that follow them (the allocation's placement, both blocks' fences, counters).

use std::time::Instant;

use crate::backend::{Storage, StreamRef};
use crate::memory::geometry::Class;
use crate::memory::manager::emit::Change;
use crate::memory::manager::{is_refusal, Manager};
use crate::memory::pool::{Placement, State};
use crate::types::error::Result;
use crate::types::{MemoryKind, QueueIndex};

impl<B: Storage> Manager<B> {
    /// Takes free ranges elsewhere for the used chunks among `chunks` (which all lie in one
    /// block region to empty), holding that region's free chunks out of the index meanwhile.
    /// Returns (source chunk, destination) pairs, or `None` (everything undone) when one does
    /// not fit.
    pub(super) fn plan_moves(
        &mut self,
        kind: MemoryKind,
        chunks: &[u32],
    ) -> Result<Option<Vec<(u32, Placement)>>> {
        let g = self.settings.geometry;
        let pool = &mut self.pools[kind.index()];
        for &id in chunks {
            if pool.chunks[id].state == State::Free {
                pool.hold(id);
            }
        }
        let mut used: Vec<u32> = chunks
            .iter()
            .copied()
            .filter(|&id| pool.chunks[id].state == State::Used)
            .collect();
        used.sort_by_key(|&id| std::cmp::Reverse(pool.chunks[id].size));
        let mut moves = Vec::with_capacity(used.len());
        for src in used {
            let size = pool.chunks[src].size;
            let class = g.class(size);
            let other = if class == Class::Small {
                Class::Large
            } else {
                Class::Small
            };
            match pool
                .try_place(class, size)
                .or_else(|| pool.try_place(other, size))
            {
                Some(dst) => moves.push((src, dst)),
                None => {
                    for (_, dst) in moves {
                        pool.free(dst.chunk);
                    }
                    for &id in chunks {
                        if pool.chunks[id].state == State::Held {
                            pool.release_chunk(id);
                        }
                    }
                    return Ok(None);
                }
            }
        }
        Ok(Some(moves))
    }

    /// Copies each source chunk's allocation to its destination, points the allocation there,
    /// and frees the region `chunks` (held and vacated chunks). Returns the last copy's
    /// submission (0: none).
    pub(super) fn run_moves(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        chunks: &[u32],
        moves: Vec<(u32, Placement)>,
    ) -> Result<QueueIndex> {
        let mut last = 0;
        let mut result = Ok(());
        let mut pending = moves.into_iter();
        for (src, dst) in pending.by_ref() {
            match self.move_one(backend, kind, src, dst) {
                Ok(index) => last = last.max(index),
                // Pages of the destination went back and the budget or the device refuses
                // to map them again: the pass stops where it is.
                Err(e) if is_refusal(&e) => {
                    self.pools[kind.index()].free(dst.chunk);
                    break;
                }
                Err(e) => {
                    self.pools[kind.index()].free(dst.chunk);
                    result = Err(e);
                    break;
                }
            }
        }
        let pool = &mut self.pools[kind.index()];
        for (_, dst) in pending {
            pool.free(dst.chunk);
        }
        for &id in chunks {
            if pool.chunks[id].state == State::Held {
                pool.release_chunk(id);
            }
        }
        result.map(|()| last)
    }

    /// Moves the allocation in used chunk `src` to `dst` (taken, same size).
    pub(super) fn move_one(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        src: u32,
        dst: Placement,
    ) -> Result<QueueIndex> {
        let pool = &self.pools[kind.index()];
        let c = &pool.chunks[src];
        let (sb, so, size, owner) = (c.block, c.offset, c.size, c.owner);
        let Some(key) = owner else {
            return Err(crate::Error::Internal {
                message: "compaction picked a released range".into(),
            });
        };
        let missing = || crate::Error::Internal {
            message: "compaction lost a block".into(),
        };
        if self.streams.active {
            // The destination may hold memory other streams released: they pass first.
            self.streams.settle(backend, Some(StreamRef::Own), true)?;
        }
        // Pages given back there are mapped again first.
        self.map_for(backend, kind, &dst, 0, None)?;
        let pool = &self.pools[kind.index()];
        let from = pool.block(sb).ok_or_else(missing)?;
        let to = pool.block(dst.block).ok_or_else(missing)?;
        // SAFETY: the used chunk `src` and the taken free chunk `dst` lie in their blocks, are
        // distinct chunks (so do not overlap), and are whole units.
        let index = unsafe { backend.copy(&from.raw, so, &to.raw, dst.offset, size)? };
        let pool = &mut self.pools[kind.index()];
        pool.take_dirty(&dst, |_| {});
        pool.set_owner(dst.chunk, key, true);
        pool.vacate(src);
        // The source is free again once the copy has read it, on vramkit's queue.
        self.streams.on_release(StreamRef::Own);
        let pool = &mut self.pools[kind.index()];
        for b in [sb, dst.block] {
            if let Some(blk) = pool.block_mut(b) {
                blk.fence = blk.fence.max(index);
            }
        }
        if let Some(a) = self.allocs.get_mut(key) {
            a.placement = dst;
            a.last_use = a.last_use.max(index);
            a.last_write = a.last_write.max(index);
        }
        self.emit(Change::AllocationMoved { bytes: size });
        Ok(index)
    }

    /// Counts a pass and records it on the timeline.
    pub(super) fn finish_pass(&mut self, kind: MemoryKind, moved: u64, start: Instant) {
        self.emit(Change::Compacted {
            kind,
            moved,
            took: start.elapsed(),
        });
    }
}
