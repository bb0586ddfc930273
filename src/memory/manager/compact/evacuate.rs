//! Evacuation: giving blocks back to the device, empty cached ones first, then the sparsest
//! after moving their allocations into free ranges of other blocks.

use std::time::Instant;

use super::{CompactReport, Goal};
use crate::backend::Storage;
use crate::memory::manager::Manager;
use crate::memory::pool::State;
use crate::types::error::Result;
use crate::types::MemoryKind;

impl<B: Storage> Manager<B> {
    /// Gives blocks of `kind` back to the device until `goal`: first empty cached ones, largest
    /// first, then blocks evacuated sparsest first, moving at most `max_bytes`. Emptied blocks
    /// go back once their copies complete.
    pub(crate) fn evacuate(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        goal: Goal,
        max_bytes: u64,
    ) -> Result<CompactReport> {
        let start = Instant::now();
        let mut report = CompactReport::default();
        let reached = |m: &Self, freed: u64| match goal {
            Goal::Room(n) => m.budget.headroom(m.counters.reserved) + freed >= n,
            Goal::Free(n) => freed >= n,
            Goal::All => false,
        };
        if reached(self, 0) {
            return Ok(report);
        }
        if goal != Goal::All {
            let mut empty: Vec<(u64, u32)> = self.pools[kind.index()]
                .blocks()
                .filter(|(_, b)| b.live == 0)
                .map(|(i, b)| (b.size, i))
                .collect();
            empty.sort_unstable_by(|a, b| b.cmp(a));
            for (_, b) in empty {
                if reached(self, report.bytes_freed) {
                    break;
                }
                if let Some(blk) = self.pools[kind.index()].remove_block(b) {
                    report.blocks_freed += 1;
                    // Pages given back inside it were counted when they went.
                    report.bytes_freed += blk.size - blk.unmapped.bytes;
                    self.free_block(backend, kind, blk);
                }
            }
        }
        let freed_empty = report.bytes_freed;
        let pool = &self.pools[kind.index()];
        let mut order: Vec<(u64, std::cmp::Reverse<u64>, u32)> = pool
            .blocks()
            .filter(|(_, b)| b.live > 0 && b.pinned == 0)
            .map(|(i, b)| (b.used, std::cmp::Reverse(b.seq), i))
            .collect();
        order.sort_unstable();
        let mut targets = std::collections::HashSet::new();
        // Emptied blocks leave the pool at once (so nothing moves into them) and go back to
        // the device once their copies have run.
        let mut emptied = Vec::new();
        let mut last = 0;
        for (_, _, b) in order {
            let freeing: u64 = emptied
                .iter()
                .map(|e: &crate::memory::pool::PoolBlock<B::Block>| e.size)
                .sum();
            if reached(self, freed_empty + freeing) {
                break;
            }
            if targets.contains(&b) {
                continue;
            }
            let pool = &self.pools[kind.index()];
            let Some(blk) = pool.block(b) else { continue };
            if blk.live == 0 || blk.pinned > 0 || report.bytes_moved + blk.used > max_bytes {
                continue;
            }
            let free_total = pool.free_total();
            let chunks: Vec<u32> = pool.chunks_of(b).collect();
            let free_inside: u64 = chunks
                .iter()
                .filter(|&&id| pool.chunks[id].state == State::Free)
                .map(|&id| pool.chunks[id].size)
                .sum();
            let used = blk.used;
            if used > free_total - free_inside {
                continue;
            }
            let Some(moves) = self.plan_moves(kind, &chunks)? else {
                continue;
            };
            targets.extend(moves.iter().map(|(_, d)| d.block));
            let n = moves.len() as u64;
            last = last.max(self.run_moves(backend, kind, &chunks, moves)?);
            report.bytes_moved += used;
            report.allocations_moved += n;
            if let Some(blk) = self.pools[kind.index()].remove_block(b) {
                emptied.push(blk);
            }
        }
        if report.allocations_moved == 0 {
            return Ok(report);
        }
        if !emptied.is_empty() && last != 0 {
            backend.wait(last)?;
        }
        for blk in emptied {
            report.blocks_freed += 1;
            report.bytes_freed += blk.size - blk.unmapped.bytes;
            self.free_block(backend, kind, blk);
        }
        report.duration = start.elapsed();
        self.finish_pass(kind, report.bytes_moved, start);
        Ok(report)
    }
}
