//! Chunks: the ranges a block is cut into, used or free, in an arena indexed by `u32`.
//!
//! The chunks of one block form a doubly linked list in address order (`prev`/`next`), so a
//! freed chunk finds its neighbours in O(1) and merges with the free ones at once. Free chunks
//! are also linked into one bin of the [`FreeIndex`](super::tlsf::FreeIndex) (`free_prev` /
//! `free_next`). Ids of removed chunks are reused.

use crate::memory::handle::BufferKey;

/// "No chunk": the end of a list.
pub(crate) const NIL: u32 = u32::MAX;

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Nothing; it is in the free index.
    Free,
    /// Nothing, but it is out of the free index for a while (a compaction window being
    /// emptied, or a block being evacuated).
    Held,
    /// A live allocation, or a released one that pending GPU work still uses.
    Used,
}

#[derive(Clone, Debug)]
pub(crate) struct Chunk {
    /// Byte offset in the block.
    pub offset: u64,
    /// Bytes (a multiple of the pool's unit).
    pub size: u64,
    /// Index of the block.
    pub block: u32,
    pub prev: u32,
    pub next: u32,
    pub free_prev: u32,
    pub free_next: u32,
    pub state: State,
    /// The allocation in a used chunk; `None` once released (waiting for pending work).
    pub owner: Option<BufferKey>,
    /// A used chunk whose allocation may not move.
    pub pinned: bool,
    /// A free chunk: the pool's release stamp ([`Pool::stamp`](super::Pool::stamp)) when its
    /// bytes were last freed, the latest of the ranges it joins (0: never used).
    pub freed_at: u64,
}

impl Chunk {
    pub fn end(&self) -> u64 {
        self.offset + self.size
    }
}

/// The arena.
#[derive(Default)]
pub(crate) struct Chunks {
    items: Vec<Chunk>,
    vacant: Vec<u32>,
}

impl Chunks {
    pub fn insert(&mut self, c: Chunk) -> u32 {
        match self.vacant.pop() {
            Some(id) => {
                self.items[id as usize] = c;
                id
            }
            None => {
                self.items.push(c);
                (self.items.len() - 1) as u32
            }
        }
    }

    pub fn remove(&mut self, id: u32) {
        self.vacant.push(id);
    }

    /// A fresh free chunk of `size` bytes at `offset` of `block`, linked to nothing.
    pub fn new_free(&mut self, block: u32, offset: u64, size: u64) -> u32 {
        self.insert(Chunk {
            offset,
            size,
            block,
            prev: NIL,
            next: NIL,
            free_prev: NIL,
            free_next: NIL,
            state: State::Free,
            owner: None,
            pinned: false,
            freed_at: 0,
        })
    }

    /// Cuts `size` bytes off the front of chunk `id`; the rest becomes a new chunk after it
    /// (same state, unlinked from any free list), whose id is returned.
    pub fn split(&mut self, id: u32, size: u64) -> u32 {
        let c = &self[id];
        let (block, offset, rest, next) = (c.block, c.offset + size, c.size - size, c.next);
        let tail = self.insert(Chunk {
            offset,
            size: rest,
            block,
            prev: id,
            next,
            free_prev: NIL,
            free_next: NIL,
            state: self[id].state,
            owner: None,
            pinned: false,
            freed_at: self[id].freed_at,
        });
        if next != NIL {
            self[next].prev = tail;
        }
        let c = &mut self[id];
        c.size = size;
        c.next = tail;
        tail
    }

    /// Merges chunk `next` (the address-order successor of `id`) into `id`, and frees its id.
    pub fn absorb_next(&mut self, id: u32) {
        let next = self[id].next;
        let (size, after) = (self[next].size, self[next].next);
        self[id].freed_at = self[id].freed_at.max(self[next].freed_at);
        self[id].size += size;
        self[id].next = after;
        if after != NIL {
            self[after].prev = id;
        }
        self.remove(next);
    }
}

impl std::ops::Index<u32> for Chunks {
    type Output = Chunk;
    #[inline]
    fn index(&self, id: u32) -> &Chunk {
        &self.items[id as usize]
    }
}

impl std::ops::IndexMut<u32> for Chunks {
    #[inline]
    fn index_mut(&mut self, id: u32) -> &mut Chunk {
        &mut self.items[id as usize]
    }
}
