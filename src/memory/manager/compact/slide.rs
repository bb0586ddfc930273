//! Sliding: each movable allocation of a block moves down over the free range before it, so the
//! block's free space gathers after its last allocation (or the last one that may not move).
//!
//! A slide by `shift` bytes of an allocation larger than `shift` overlaps itself: it is copied
//! in pieces of at most `shift` bytes, lowest first, each landing on bytes already copied or
//! free (copies on one queue run in order). Allocations that would need more pieces stay where
//! they are: more than [`SERVE_PIECES`] when the slide serves a request (which would be refused
//! without it), more than the backend's
//! [`max_slide_pieces`](crate::backend::Storage::max_slide_pieces) in a pass of its own.

use std::time::Instant;

use crate::backend::{Storage, StreamRef};
use crate::memory::manager::emit::Change;
use crate::memory::manager::{is_refusal, Manager};
use crate::memory::pool::{Pool, State, NIL};
use crate::types::error::Result;
use crate::types::{MemoryKind, QueueIndex};

/// The most copies one slide may take (an allocation's size over the distance it moves, rounded
/// up) when it makes room for a request.
const SERVE_PIECES: u64 = 4096;

/// Where to start sliding block `b` so that `want` free bytes gather at its end: the lowest
/// free chunk needed, and the live bytes above it (what the slide moves). `None` when a pinned
/// allocation is in the way or the block has too few free bytes.
fn slide_start<Blk>(pool: &Pool<Blk>, b: u32, want: u64) -> Option<(u32, u64)> {
    let mut id = pool.block(b)?.last;
    let (mut free, mut live) = (0, 0);
    while id != NIL {
        let c = &pool.chunks[id];
        match c.state {
            State::Free => {
                free += c.size;
                if free >= want {
                    return Some((id, live));
                }
            }
            State::Used if !c.pinned && c.owner.is_some() => live += c.size,
            _ => return None,
        }
        id = c.prev;
    }
    None
}

impl<B: Storage> Manager<B> {
    /// Slides blocks of `kind`, moving at most `max_bytes`. With `want`, only the cheapest
    /// block (of `only`, if given) that can gather `want` free bytes at its end, and only as far
    /// down as that needs; without, every block from its start, those with the most free bytes
    /// first. Returns the bytes moved.
    pub(crate) fn slide(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        max_bytes: u64,
        want: Option<u64>,
        only: Option<u32>,
    ) -> Result<u64> {
        let start = Instant::now();
        let pool = &self.pools[kind.index()];
        let plan: Vec<(u32, u32)> = match want {
            Some(want) => pool
                .blocks()
                .filter(|(b, blk)| blk.size >= want && only.is_none_or(|o| o == *b))
                .filter_map(|(b, _)| slide_start(pool, b, want).map(|(c, cost)| (cost, b, c)))
                .filter(|&(cost, _, _)| cost <= max_bytes)
                .min()
                .map(|(_, b, c)| vec![(b, c)])
                .unwrap_or_default(),
            None => {
                let mut order: Vec<(u64, u32, u32)> = pool
                    .blocks()
                    .filter(|(_, blk)| blk.live > 0 && blk.used < blk.size)
                    .map(|(i, blk)| (blk.size - blk.used, i, blk.first))
                    .collect();
                order.sort_unstable_by(|a, b| b.cmp(a));
                order.into_iter().map(|(_, b, c)| (b, c)).collect()
            }
        };
        let max_pieces = match want {
            Some(_) => SERVE_PIECES,
            None => backend.max_slide_pieces(),
        };
        let mut moved = 0;
        for (b, from) in plan {
            if moved >= max_bytes {
                break;
            }
            moved += self.slide_block(backend, kind, b, from, max_bytes - moved, max_pieces)?;
        }
        if moved > 0 {
            self.finish_pass(kind, moved, start);
        }
        Ok(moved)
    }

    /// Slides the allocations of block `b` from chunk `from` on down, moving at most
    /// `max_bytes`, each in at most `max_pieces` copies.
    fn slide_block(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        b: u32,
        from: u32,
        max_bytes: u64,
        max_pieces: u64,
    ) -> Result<u64> {
        let mut moved = 0;
        let mut id = from;
        while id != NIL {
            let pool = &self.pools[kind.index()];
            let c = &pool.chunks[id];
            let (size, prev, owner) = (c.size, c.prev, c.owner);
            let slidable = c.state == State::Used
                && !c.pinned
                && prev != NIL
                && pool.chunks[prev].state == State::Free;
            if let (true, Some(key)) = (slidable, owner) {
                let shift = pool.chunks[prev].size;
                if size.div_ceil(shift) <= max_pieces && moved + size <= max_bytes {
                    let Some(index) = self.slide_one(backend, kind, b, id, shift)? else {
                        // The pages below went back and the budget cannot map them again.
                        break;
                    };
                    if let Some(a) = self.allocs.get_mut(key) {
                        a.placement.offset -= shift;
                        a.last_use = a.last_use.max(index);
                        a.last_write = a.last_write.max(index);
                    }
                    moved += size;
                    self.emit(Change::AllocationMoved { bytes: size });
                }
            }
            id = self.pools[kind.index()].chunks[id].next;
        }
        Ok(moved)
    }

    /// Copies used chunk `id` of block `b` down by `shift` bytes, in pieces where it overlaps
    /// itself, and records the new layout. Returns the last copy's submission, or `None`
    /// (nothing done) when pages below went back and the budget or the device refuses to map
    /// them again.
    fn slide_one(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        b: u32,
        id: u32,
        shift: u64,
    ) -> Result<Option<QueueIndex>> {
        let (offset, size) = {
            let c = &self.pools[kind.index()].chunks[id];
            (c.offset, c.size)
        };
        // The free range below may hold memory other streams released, or pages given back.
        if self.streams.active {
            self.streams.settle(backend, Some(StreamRef::Own), true)?;
        }
        let below = crate::memory::pool::Placement {
            block: b,
            offset: offset - shift,
            size: shift,
            chunk: NIL,
        };
        match self.map_for(backend, kind, &below, 0, None) {
            Err(e) if is_refusal(&e) => return Ok(None),
            r => r?,
        }
        let pool = &mut self.pools[kind.index()];
        let Some(blk) = pool.block(b) else {
            return Ok(None);
        };
        let mut index = 0;
        let mut at = 0;
        while at < size {
            let n = shift.min(size - at);
            // SAFETY: source and destination lie in the block (the chunk, and the free range
            // of `shift` bytes below it); at most `shift` bytes apart per copy, they do not
            // overlap; chunk offsets and sizes are whole units (multiples of the copy alignment).
            index =
                unsafe { backend.copy(&blk.raw, offset + at, &blk.raw, offset - shift + at, n)? };
            at += n;
        }
        pool.slide_down(id);
        let p = crate::memory::pool::Placement {
            block: b,
            offset: offset - shift,
            size,
            chunk: id,
        };
        pool.take_dirty(&p, |_| {});
        if let Some(blk) = pool.block_mut(b) {
            blk.fence = blk.fence.max(index);
        }
        Ok(Some(index))
    }
}
