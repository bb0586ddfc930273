//! Windows: the range of one block, as long as a request, whose live allocations weigh least,
//! emptied into free ranges elsewhere so the request takes it.

use std::time::Instant;

use crate::backend::Storage;
use crate::memory::geometry::Class;
use crate::memory::manager::Manager;
use crate::memory::pool::{Placement, Pool, State};
use crate::types::error::Result;
use crate::types::MemoryKind;

/// A range of a block to empty: `cost` bytes of live allocations overlap it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    block: u32,
    start: u64,
    cost: u64,
}

/// Blocks whose windows [`windows`] weighs, those with the most free bytes.
const SWEPT_BLOCKS: usize = 4;

/// The cheapest windows of `size` bytes in blocks of `class` (any class: `None`), cheapest
/// first, at most `keep`, each costing at most `max_cost`. A window holds no pinned or held
/// chunk, and no allocation larger than `movable` (the largest free range: nothing larger can
/// go anywhere). A segment's windows may reach `beyond` bytes past its end (it grows by what
/// they need). Each starts at a chunk's start: any cheapest window can be shifted there.
fn windows<Blk>(
    pool: &Pool<Blk>,
    class: Option<Class>,
    size: u64,
    max_cost: u64,
    movable: u64,
    keep: usize,
    beyond: u64,
) -> Vec<Window> {
    let mut best: Vec<Window> = Vec::with_capacity(keep + 1);
    let mut span: Vec<(u64, u64, u64, bool)> = Vec::new();
    // The blocks with the most free bytes: a window elsewhere moves more.
    let mut candidates: Vec<(u64, u32)> = pool
        .blocks()
        .filter(|(_, blk)| {
            let reach = blk
                .size
                .saturating_add(if blk.segment { beyond } else { 0 });
            reach >= size && class.is_none_or(|c| c == blk.class)
        })
        .map(|(b, blk)| (blk.size - blk.used, b))
        .collect();
    if candidates.len() > SWEPT_BLOCKS {
        candidates.select_nth_unstable_by(SWEPT_BLOCKS - 1, |a, b| b.cmp(a));
        candidates.truncate(SWEPT_BLOCKS);
    }
    for (_, b) in candidates {
        let Some(blk) = pool.block(b) else { continue };
        let reach = blk
            .size
            .saturating_add(if blk.segment { beyond } else { 0 });
        // (offset, end, used bytes, blocked) per chunk.
        span.clear();
        span.extend(pool.chunks_of(b).map(|id| {
            let c = &pool.chunks[id];
            let used = if c.state == State::Used { c.size } else { 0 };
            let blocked = c.state == State::Held
                || (c.state == State::Used && (c.pinned || c.owner.is_none() || c.size > movable));
            (c.offset, c.end(), used, blocked)
        }));
        let (mut j, mut cost, mut blocked) = (0usize, 0u64, 0usize);
        for i in 0..span.len() {
            let start = span[i].0;
            let end = start + size;
            if end > reach {
                break;
            }
            while j < span.len() && span[j].0 < end {
                cost += span[j].2;
                blocked += usize::from(span[j].3);
                j += 1;
            }
            if blocked == 0 && cost <= max_cost {
                let w = Window {
                    block: b,
                    start,
                    cost,
                };
                let at = best.partition_point(|x| x.cost <= w.cost);
                if at < keep {
                    best.insert(at, w);
                    best.truncate(keep);
                }
            }
            cost -= span[i].2;
            blocked -= usize::from(span[i].3);
        }
    }
    best
}

impl<B: Storage> Manager<B> {
    /// Empties the cheapest window of `size` bytes (see the module docs) and places the request
    /// there; a window may reach `beyond` bytes past a segment's end, which then grows. `None`
    /// when no window's allocations fit elsewhere within `max_pass_bytes`.
    pub(crate) fn compact_into_window(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        class: Option<Class>,
        size: u64,
        beyond: u64,
    ) -> Result<Option<Placement>> {
        let start_time = Instant::now();
        let max = self.settings.compaction.max_pass_bytes;
        let pool = &self.pools[kind.index()];
        let (free_total, largest) = pool.free_space();
        let ws = windows(pool, class, size, max, largest, 3, beyond);
        for w in ws {
            let pool = &mut self.pools[kind.index()];
            let inside: Vec<u32> = pool
                .chunks_of(w.block)
                .filter(|&id| {
                    let c = &pool.chunks[id];
                    c.end() > w.start && c.offset < w.start + size
                })
                .collect();
            let free_inside: u64 = inside
                .iter()
                .filter(|&&id| pool.chunks[id].state == State::Free)
                .map(|&id| pool.chunks[id].size)
                .sum();
            if w.cost > free_total - free_inside {
                continue;
            }
            let Some(moves) = self.plan_moves(kind, &inside)? else {
                continue;
            };
            self.run_moves(backend, kind, &inside, moves)?;
            let end = self.pools[kind.index()]
                .block(w.block)
                .map_or(0, |b| b.size);
            if w.start + size > end {
                let need = w.start + size - end;
                let g = self.settings.geometry;
                let extra = need.next_multiple_of(g.granule).min(beyond).max(need);
                self.extend_segment(backend, kind, w.block, extra)?;
            }
            // The window is free now, inside one chunk (merged with its free neighbours).
            let pool = &mut self.pools[kind.index()];
            let Some(id) = pool.chunks_of(w.block).find(|&id| {
                let c = &pool.chunks[id];
                c.offset <= w.start && c.end() > w.start
            }) else {
                continue;
            };
            if pool.chunks[id].state != State::Free || pool.chunks[id].size < size {
                continue;
            }
            let p = pool.take(id, size);
            self.finish_pass(kind, w.cost, start_time);
            return Ok(Some(p));
        }
        Ok(None)
    }
}
