//! The blocks of one memory kind and the ranges cut from them.
//!
//! Every block is cut into chunks (`chunks.rs`), used or free, linked in address order. Free
//! chunks of all blocks of a class sit in one size-ordered index (`tlsf.rs`): a request takes
//! the best fit across every block of its class in O(1), splits off what it does not need, and
//! a released range merges with its free neighbours at once, so after everything is released
//! each block is one free range again. Making a block costs one chunk (O(1)). Blocks that empty
//! are kept (cached) up to the context's release threshold and serve any request of their
//! class, split as needed (`blocks.rs`: blocks in and out, the segment's end). `check.rs`
//! re-derives the whole layout for audits.
//!
//! This replaced `offset-allocator`, whose per-block table of 128 Ki entries made each new block
//! cost ~1.2 ms, which rounded requests up to its size bins (up to 12.5 %) and could miss an
//! exact hole, and which had no index across blocks (placement was first fit, block by block).
//!
//! Each block also remembers which ranges were never handed out (`clean.rs`): those still read
//! as zeros, and only the rest needs a clear before reuse.

mod blocks;
mod check;
mod chunks;
mod clean;
mod pages;
mod tlsf;

use std::ops::Range;

use chunks::Chunks;
pub(crate) use chunks::{State, NIL};
use clean::CleanRanges;
use tlsf::FreeIndex;

use super::geometry::Class;
use super::handle::BufferKey;
use crate::types::QueueIndex;

/// Where an allocation lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Index of the block.
    pub block: u32,
    /// Byte offset inside the block.
    pub offset: u64,
    /// Bytes reserved (the request rounded up to the unit).
    pub size: u64,
    /// The chunk.
    pub chunk: u32,
}

pub(crate) struct PoolBlock<Blk> {
    pub raw: Blk,
    pub size: u64,
    pub class: Class,
    /// Creation order: lower blocks are filled first. Unique for the pool's life.
    pub seq: u64,
    /// The first chunk in address order.
    pub first: u32,
    /// The last chunk in address order.
    pub last: u32,
    /// A block that grows and shrinks at its end (the class's one segment).
    pub segment: bool,
    /// Used chunks.
    pub live: u32,
    /// Bytes in used chunks.
    pub used: u64,
    /// Used chunks that may not move (immovable, or released while GPU work still uses them).
    pub pinned: u32,
    /// The last submission that used memory of this block since released, or moved bytes out
    /// of or into it (compaction): the block is not given back, nor shrunk, before it
    /// completes, and host-visible memory reused here waits for it before the host touches it.
    pub fence: QueueIndex,
    clean: CleanRanges,
    /// Pages given back inside it (`pages.rs`).
    pub unmapped: pages::Unmapped,
}

pub(crate) struct Pool<Blk> {
    blocks: Vec<Option<PoolBlock<Blk>>>,
    vacant: Vec<u32>,
    pub chunks: Chunks,
    free: [FreeIndex; 2],
    unit: u64,
    next_seq: u64,
    /// Bytes in blocks without a used chunk.
    pub empty_bytes: u64,
    /// Bytes in blocks.
    pub reserved: u64,
    /// Blocks held.
    pub block_count: usize,
    /// The one growing block, where the backend's blocks grow in place.
    segment: Option<u32>,
    /// Bytes of pages given back inside blocks (part of their sizes, not of what they hold).
    pub unmapped_bytes: u64,
    /// The release stamp that chunks freed now take (`Chunk::freed_at`): the memory manager's
    /// count of stream releases ([`Streams::seq`](crate::memory::streams::Streams)), never
    /// lower than any release of the bytes freed.
    pub stamp: u64,
}

impl<Blk> Pool<Blk> {
    pub fn new(unit: u64) -> Self {
        Self {
            blocks: Vec::new(),
            vacant: Vec::new(),
            chunks: Chunks::default(),
            free: [FreeIndex::new(unit), FreeIndex::new(unit)],
            unit,
            next_seq: 0,
            empty_bytes: 0,
            reserved: 0,
            block_count: 0,
            segment: None,
            unmapped_bytes: 0,
            stamp: 0,
        }
    }

    #[inline]
    pub fn block(&self, b: u32) -> Option<&PoolBlock<Blk>> {
        self.blocks.get(b as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub fn block_mut(&mut self, b: u32) -> Option<&mut PoolBlock<Blk>> {
        self.blocks.get_mut(b as usize).and_then(Option::as_mut)
    }

    /// Live blocks with their indices.
    pub fn blocks(&self) -> impl Iterator<Item = (u32, &PoolBlock<Blk>)> {
        self.blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|b| (i as u32, b)))
    }

    /// The best free chunk of `class` for `size` bytes, left free.
    #[inline]
    pub fn find(&self, class: Class, size: u64) -> Option<u32> {
        let blocks = &self.blocks;
        self.free[class as usize].find(&self.chunks, size, |b| {
            blocks
                .get(b as usize)
                .and_then(Option::as_ref)
                .map_or(u64::MAX, |b| b.seq)
        })
    }

    /// Places `size` bytes (a multiple of the unit) in the best free range of `class`.
    #[inline]
    pub fn try_place(&mut self, class: Class, size: u64) -> Option<Placement> {
        let id = self.find(class, size)?;
        Some(self.take(id, size))
    }

    /// Places `size` bytes in free chunk `id` (which holds at least that much), splitting off
    /// the rest, and marks it used.
    pub fn take(&mut self, id: u32, size: u64) -> Placement {
        let c = &self.chunks[id];
        let (b, state, whole, offset, prev) = (c.block, c.state, c.size, c.offset, c.prev);
        let class = self.block(b).map_or(Class::Large, |blk| blk.class) as usize;
        let used = if state == State::Free && whole > size {
            // Carve from the front: the free rest keeps its id, and its place in the index
            // while its bin stays the same.
            let u = self.chunks.insert(chunks::Chunk {
                offset,
                size,
                block: b,
                prev,
                next: id,
                free_prev: NIL,
                free_next: NIL,
                state: State::Used,
                owner: None,
                pinned: false,
                freed_at: 0,
            });
            let f = &mut self.chunks[id];
            f.offset += size;
            f.size -= size;
            f.prev = u;
            self.link_prev(b, prev, u);
            self.free[class].resized(&mut self.chunks, id, whole);
            u
        } else {
            if state == State::Free {
                self.free[class].remove(&mut self.chunks, id);
            }
            if whole > size {
                let rest = self.chunks.split(id, size);
                self.chunks[rest].state = State::Free;
                self.free[class].insert(&mut self.chunks, rest);
                self.mark_last(rest);
            }
            let c = &mut self.chunks[id];
            c.state = State::Used;
            c.owner = None;
            c.pinned = false;
            id
        };
        if let Some(blk) = self.blocks.get_mut(b as usize).and_then(Option::as_mut) {
            if blk.live == 0 {
                self.empty_bytes -= blk.size;
            }
            blk.live += 1;
            blk.used += size;
        }
        Placement {
            block: b,
            offset,
            size,
            chunk: used,
        }
    }

    /// Points chunk `prev` (or, when there is none, block `b`'s first chunk) at `id`.
    #[inline]
    fn link_prev(&mut self, b: u32, prev: u32, id: u32) {
        if prev != NIL {
            self.chunks[prev].next = id;
        } else if let Some(blk) = self.block_mut(b) {
            blk.first = id;
        }
    }

    /// Records chunk `id` as its block's last if it is.
    #[inline]
    fn mark_last(&mut self, id: u32) {
        if self.chunks[id].next == NIL {
            let b = self.chunks[id].block;
            if let Some(blk) = self.block_mut(b) {
                blk.last = id;
            }
        }
    }

    /// Records the allocation a used chunk holds, and whether it may move.
    pub fn set_owner(&mut self, chunk: u32, owner: BufferKey, movable: bool) {
        let c = &mut self.chunks[chunk];
        c.owner = Some(owner);
        if !movable && !c.pinned {
            c.pinned = true;
            let b = c.block;
            if let Some(blk) = self.block_mut(b) {
                blk.pinned += 1;
            }
        }
    }

    /// A released allocation whose range pending GPU work still uses: it stays used, and may
    /// not move, until [`free`](Self::free).
    pub fn orphan(&mut self, chunk: u32) {
        let c = &mut self.chunks[chunk];
        c.owner = None;
        if !c.pinned {
            c.pinned = true;
            let b = c.block;
            if let Some(blk) = self.block_mut(b) {
                blk.pinned += 1;
            }
        }
    }

    /// Marks a placement as handed out and calls `dirty` on the parts of it that were handed
    /// out before (and so need clearing to read as zeros).
    pub fn take_dirty(&mut self, p: &Placement, dirty: impl FnMut(Range<u64>)) {
        if let Some(b) = self.block_mut(p.block) {
            b.clean.take(p.offset..p.offset + p.size, dirty);
        }
    }

    /// Marks every range of a block as handed out before: none reads as zeros without a
    /// clear (the block was bound where code outside vramkit may write past its range).
    pub fn distrust(&mut self, block: u32) {
        if let Some(b) = self.block_mut(block) {
            let size = b.size;
            b.clean.take(0..size, |_| {});
        }
    }

    /// Returns a used chunk to the free index, merged with its free neighbours. Returns the
    /// block's index when the block became empty.
    pub fn free(&mut self, chunk: u32) -> Option<u32> {
        let c = &self.chunks[chunk];
        let (b, size, pinned) = (c.block, c.size, c.pinned);
        let blk = self.blocks.get_mut(b as usize).and_then(Option::as_mut)?;
        blk.live -= 1;
        blk.used -= size;
        if pinned {
            blk.pinned -= 1;
        }
        let emptied = blk.live == 0;
        if emptied {
            self.empty_bytes += blk.size;
        }
        self.release_chunk(chunk);
        emptied.then_some(b)
    }

    /// Empties a used chunk whose allocation moved away, holding it out of the index until
    /// [`release_chunk`](Self::release_chunk) (the region it is part of is being emptied).
    pub fn vacate(&mut self, chunk: u32) {
        let c = &mut self.chunks[chunk];
        let (b, size, pinned) = (c.block, c.size, c.pinned);
        c.state = State::Held;
        c.owner = None;
        c.pinned = false;
        if let Some(blk) = self.blocks.get_mut(b as usize).and_then(Option::as_mut) {
            blk.live -= 1;
            blk.used -= size;
            if pinned {
                blk.pinned -= 1;
            }
            if blk.live == 0 {
                self.empty_bytes += blk.size;
            }
        }
    }

    /// Slides used chunk `id` down over the free chunk before it, so that the free space
    /// follows it (merged with a free chunk after). The caller moves the bytes. Returns the
    /// chunk's old offset, or `None` when the chunk before is not free.
    pub fn slide_down(&mut self, id: u32) -> Option<u64> {
        let f = self.chunks[id].prev;
        if f == NIL || self.chunks[f].state != State::Free {
            return None;
        }
        let b = self.chunks[id].block;
        let class = self.block(b)?.class;
        let old = self.chunks[id].offset;
        let (p, n) = (self.chunks[f].prev, self.chunks[id].next);
        let f_offset = self.chunks[f].offset;
        let size = self.chunks[id].size;
        // P - F - U - N  becomes  P - U - F - N.
        let u = &mut self.chunks[id];
        u.offset = f_offset;
        u.prev = p;
        u.next = f;
        let stamp = self.stamp;
        let fc = &mut self.chunks[f];
        // It now covers bytes the moved allocation held.
        fc.freed_at = fc.freed_at.max(stamp);
        fc.offset = f_offset + size;
        fc.prev = id;
        fc.next = n;
        if p != NIL {
            self.chunks[p].next = id;
        } else if let Some(blk) = self.block_mut(b) {
            blk.first = id;
        }
        if n != NIL {
            self.chunks[n].prev = f;
            if self.chunks[n].state == State::Free {
                let index = &mut self.free[class as usize];
                index.remove(&mut self.chunks, f);
                index.remove(&mut self.chunks, n);
                self.chunks.absorb_next(f);
                index.insert(&mut self.chunks, f);
            }
        }
        self.mark_last(f);
        Some(old)
    }

    /// Makes chunk `id` (used or held) free: merged with free neighbours, into the index.
    pub fn release_chunk(&mut self, id: u32) {
        let b = self.chunks[id].block;
        let Some(class) = self.block(b).map(|blk| blk.class as usize) else {
            return;
        };
        let stamp = self.stamp;
        let c = &mut self.chunks[id];
        c.state = State::Free;
        c.owner = None;
        c.pinned = false;
        c.freed_at = stamp;
        let (prev, next, offset, size) = (c.prev, c.next, c.offset, c.size);
        let prev_free = prev != NIL && self.chunks[prev].state == State::Free;
        let next_free = next != NIL && self.chunks[next].state == State::Free;
        // Merged into a free neighbour, the range keeps that neighbour's id and, while its
        // bin stays the same, its place in the index.
        match (prev_free, next_free) {
            (false, false) => {
                self.free[class].insert(&mut self.chunks, id);
                self.mark_last(id);
            }
            (true, false) => {
                let old = self.chunks[prev].size;
                self.chunks.absorb_next(prev);
                self.free[class].resized(&mut self.chunks, prev, old);
                self.mark_last(prev);
            }
            (false, true) => {
                let n = &mut self.chunks[next];
                let old = n.size;
                n.freed_at = n.freed_at.max(stamp);
                n.offset = offset;
                n.size += size;
                n.prev = prev;
                self.link_prev(b, prev, next);
                self.chunks.remove(id);
                self.free[class].resized(&mut self.chunks, next, old);
            }
            (true, true) => {
                self.free[class].remove(&mut self.chunks, next);
                let old = self.chunks[prev].size;
                self.chunks.absorb_next(prev);
                self.chunks.absorb_next(prev);
                self.free[class].resized(&mut self.chunks, prev, old);
                self.mark_last(prev);
            }
        }
    }

    /// Takes free chunk `id` out of the index for a while (see [`State::Held`]).
    pub fn hold(&mut self, id: u32) {
        let b = self.chunks[id].block;
        if let Some(class) = self.block(b).map(|blk| blk.class) {
            self.free[class as usize].remove(&mut self.chunks, id);
            self.chunks[id].state = State::Held;
        }
    }

    /// Total free bytes, over both classes. O(1).
    #[inline]
    pub fn free_total(&self) -> u64 {
        self.free[0].bytes + self.free[1].bytes
    }

    /// Total free bytes and the largest free range, over both classes.
    pub fn free_space(&self) -> (u64, u64) {
        let total = self.free[0].bytes + self.free[1].bytes;
        let largest = self.free[0]
            .largest(&self.chunks)
            .max(self.free[1].largest(&self.chunks));
        (total, largest)
    }

    /// How many more allocations of `size` bytes fit in free ranges of `class` (found by placing
    /// them and taking them back), at most `cap`.
    pub fn count_fits(&mut self, class: Class, size: u64, cap: u64) -> u64 {
        let mut placed = Vec::new();
        while (placed.len() as u64) < cap {
            match self.try_place(class, size) {
                Some(p) => placed.push(p),
                None => break,
            }
        }
        let n = placed.len() as u64;
        for p in placed {
            self.free(p.chunk);
        }
        n
    }

    /// The chunks of block `b` in address order.
    pub fn chunks_of(&self, b: u32) -> impl Iterator<Item = u32> + '_ {
        let mut id = self.block(b).map_or(NIL, |blk| blk.first);
        std::iter::from_fn(move || {
            if id == NIL {
                return None;
            }
            let cur = id;
            id = self.chunks[id].next;
            Some(cur)
        })
    }
}

/// A seeded xorshift generator for the pool's unit tests: `next(n)` is below `n`.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}
