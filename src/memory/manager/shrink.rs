//! Giving back the free end of a segment (`shrink_block`), past a threshold or under
//! pressure: the segment keeps its address, and pages given back inside it stay so.

use std::time::Instant;

use super::emit::{Change, DriverCall};
use super::Manager;
use crate::backend::Storage;
use crate::types::error::Result;
use crate::types::MemoryKind;

impl<B: Storage> Manager<B> {
    /// Gives back the free end of the segment of `kind` past `keep` bytes. Returns the bytes
    /// given back.
    pub(crate) fn shrink_segments(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        keep: u64,
    ) -> Result<u64> {
        let pool = &self.pools[kind.index()];
        let Some(seg) = pool.segment() else {
            return Ok(0);
        };
        let tail = pool.tail_free(seg);
        let Some(blk) = pool.block(seg) else {
            return Ok(0);
        };
        if tail <= keep {
            return Ok(0);
        }
        // To the unit: a budget smaller than one granule still gets its bytes back. Kept
        // bytes (a release threshold) shrink only by whole granules, to spare the driver
        // small unmaps. Where pages inside may have gone back, to whole pages, so that none
        // is cut in two.
        let g = self.settings.geometry;
        let mut target = (blk.size - tail + keep).next_multiple_of(g.unit);
        if let Some(grid) = backend.page_grid(kind).filter(|_| !blk.unmapped.is_empty()) {
            target = grid.ceil(target);
        }
        if target >= blk.size || (keep > 0 && blk.size - target < g.granule) {
            return Ok(0);
        }
        if target == 0 {
            // Nothing left in it: the segment goes (`free_block` waits for its work); the next
            // growth makes a new one.
            let size = blk.size;
            if let Some(b) = self.pools[kind.index()].remove_block(seg) {
                self.free_block(backend, kind, b);
                return Ok(size);
            }
            return Ok(0);
        }
        // Copies may still read the end (a compaction's source): they run first, and so does
        // every stream's work on memory released there.
        if blk.fence != 0 {
            backend.wait(blk.fence)?;
        }
        if self.streams.active {
            self.streams.settle(backend, None, true)?;
        }
        let Some(blk) = self.pools[kind.index()].block(seg) else {
            return Ok(0);
        };
        let start = Instant::now();
        // SAFETY: the end past `target` is one free chunk, and the work that last used the
        // block (`fence`) has finished: nothing uses the end.
        let shrunk = unsafe { backend.shrink_block(&blk.raw, target) };
        let old = blk.size;
        self.emit(DriverCall::GiveBack.since(start));
        let size = shrunk?;
        let delta = old.saturating_sub(size);
        if delta == 0 {
            return Ok(0);
        }
        // Pages given back past the new end were counted when they went.
        let cut = self.pools[kind.index()].cut_unmapped(seg, size);
        self.pools[kind.index()].truncate(seg, size);
        let delta = delta - cut;
        self.emit(Change::SegmentShrunk { kind, bytes: delta });
        Ok(delta)
    }
}
