//! Blocks entering and leaving a pool: adding one (O(1)), taking cached empty ones back out,
//! draining at shutdown, and the pool's segment growing and shrinking at its end.

use super::chunks::{State, NIL};
use super::clean::CleanRanges;
use super::{Pool, PoolBlock};
use crate::memory::geometry::Class;
use crate::types::QueueIndex;

impl<Blk> Pool<Blk> {
    /// The pool's segment, if it has one (see [`add_block`](Self::add_block)).
    pub fn segment(&self) -> Option<u32> {
        self.segment
    }

    /// Bytes free at the end of block `b` (its last chunk, when free).
    pub fn tail_free(&self, b: u32) -> u64 {
        self.block(b).map_or(0, |blk| {
            let c = &self.chunks[blk.last];
            if c.state == State::Free {
                c.size
            } else {
                0
            }
        })
    }

    /// Block `b` grew by `extra` bytes at its end (which read as zeros): they join its last
    /// chunk when that is free, else become a free chunk.
    pub fn extend(&mut self, b: u32, extra: u64) {
        let Some(blk) = self.block(b) else { return };
        let (last, class, old, live) = (blk.last, blk.class, blk.size, blk.live);
        let index = &mut self.free[class as usize];
        // New bytes may be cleared by work counted as a release (`Pool::stamp`).
        let stamp = self.stamp;
        if self.chunks[last].state == State::Free {
            index.remove(&mut self.chunks, last);
            self.chunks[last].size += extra;
            self.chunks[last].freed_at = self.chunks[last].freed_at.max(stamp);
            index.insert(&mut self.chunks, last);
        } else {
            let id = self.chunks.new_free(b, old, extra);
            self.chunks[id].freed_at = stamp;
            self.chunks[id].prev = last;
            self.chunks[last].next = id;
            index.insert(&mut self.chunks, id);
            if let Some(blk) = self.block_mut(b) {
                blk.last = id;
            }
        }
        if let Some(blk) = self.block_mut(b) {
            blk.size += extra;
            blk.clean.extend(old, old + extra);
        }
        if live == 0 {
            self.empty_bytes += extra;
        }
        self.reserved += extra;
    }

    /// Block `b` gave back its end past `new_size` bytes, which lay in its free last chunk.
    pub fn truncate(&mut self, b: u32, new_size: u64) {
        let Some(blk) = self.block(b) else { return };
        let (last, class, old, live) = (blk.last, blk.class, blk.size, blk.live);
        let (state, offset) = (self.chunks[last].state, self.chunks[last].offset);
        // A block is never truncated to nothing (the caller removes it instead).
        if new_size >= old || new_size == 0 || state != State::Free || offset > new_size {
            return;
        }
        let index = &mut self.free[class as usize];
        index.remove(&mut self.chunks, last);
        if offset == new_size {
            let prev = self.chunks[last].prev;
            self.chunks[prev].next = NIL;
            self.chunks.remove(last);
            if let Some(blk) = self.block_mut(b) {
                blk.last = prev;
            }
        } else {
            self.chunks[last].size = new_size - offset;
            index.insert(&mut self.chunks, last);
        }
        if let Some(blk) = self.block_mut(b) {
            blk.size = new_size;
            blk.clean.truncate(new_size);
        }
        if live == 0 {
            self.empty_bytes -= old - new_size;
        }
        self.reserved -= old - new_size;
    }

    /// Adds a block of `size` bytes, one free chunk. O(1). A `segment` becomes the pool's one
    /// segment: where blocks grow in place, a pool keeps all its memory in it (both classes,
    /// in the large class's index), so compaction can gather every free byte at its end.
    pub fn add_block(&mut self, raw: Blk, size: u64, class: Class, segment: bool) -> u32 {
        let b = self.vacant.pop().unwrap_or(self.blocks.len() as u32);
        let first = self.chunks.new_free(b, 0, size);
        // A new block may be cleared by work counted as a release (`Pool::stamp`).
        self.chunks[first].freed_at = self.stamp;
        self.free[class as usize].insert(&mut self.chunks, first);
        let block = PoolBlock {
            raw,
            size,
            class,
            seq: self.next_seq,
            first,
            last: first,
            segment,
            live: 0,
            used: 0,
            pinned: 0,
            fence: 0,
            clean: CleanRanges::whole(size),
            unmapped: Default::default(),
        };
        self.next_seq += 1;
        match self.blocks.get_mut(b as usize) {
            Some(slot) => *slot = Some(block),
            None => self.blocks.push(Some(block)),
        }
        self.empty_bytes += size;
        self.reserved += size;
        self.block_count += 1;
        if segment {
            self.segment = Some(b);
        }
        b
    }

    /// Removes empty blocks whose last work is `done`, largest first, until the empty ones hold
    /// at most `keep` bytes.
    pub fn take_empty(
        &mut self,
        keep: u64,
        done: impl Fn(QueueIndex) -> bool,
    ) -> Vec<PoolBlock<Blk>> {
        let mut out = Vec::new();
        if self.empty_bytes <= keep {
            return out;
        }
        let mut empty: Vec<(u64, u32)> = self
            .blocks()
            .filter(|(_, blk)| blk.live == 0 && done(blk.fence))
            .map(|(i, blk)| (blk.size, i))
            .collect();
        empty.sort_unstable_by(|a, b| b.cmp(a));
        for (_, b) in empty {
            if self.empty_bytes <= keep {
                break;
            }
            if let Some(blk) = self.remove_block(b) {
                out.push(blk);
            }
        }
        out
    }

    /// Removes an empty block from the pool.
    pub fn remove_block(&mut self, b: u32) -> Option<PoolBlock<Blk>> {
        let blk = self.block(b)?;
        if blk.live != 0 {
            return None;
        }
        let first = blk.first;
        if self.chunks[first].state == State::Free {
            self.free[blk.class as usize].remove(&mut self.chunks, first);
        }
        self.chunks.remove(first);
        let blk = self.blocks.get_mut(b as usize)?.take()?;
        if blk.segment {
            self.segment = None;
        }
        self.vacant.push(b);
        self.empty_bytes -= blk.size;
        self.reserved -= blk.size;
        self.unmapped_bytes -= blk.unmapped.bytes;
        self.block_count -= 1;
        Some(blk)
    }

    /// Removes every block (at shutdown), whatever it holds.
    pub fn drain(&mut self) -> Vec<PoolBlock<Blk>> {
        let out: Vec<_> = self.blocks.drain(..).flatten().collect();
        *self = Self::new(self.unit);
        out
    }
}
