//! The pool's audit: its layout re-derived from the chunks and compared with its records.

use std::collections::HashSet;

use super::chunks::{State, NIL};
use super::Pool;
use crate::memory::handle::BufferKey;

impl<Blk> Pool<Blk> {
    /// Checks every invariant the pool keeps; `owns(key, chunk)` says whether allocation `key`
    /// lives in `chunk`. Returns the first violation found.
    pub fn check(&self, owns: impl Fn(BufferKey, u32) -> bool) -> Result<(), String> {
        let mut free_ids = HashSet::new();
        let (mut free_bytes, mut empty, mut reserved, mut count) = ([0u64; 2], 0, 0, 0);
        for (b, blk) in self.blocks() {
            count += 1;
            reserved += blk.size;
            let (mut at, mut live, mut used, mut pinned) = (0, 0, 0, 0);
            let mut prev = NIL;
            let mut prev_free = false;
            for id in self.chunks_of(b) {
                let c = &self.chunks[id];
                let here = format!("block {b} chunk {id} at {}+{}", c.offset, c.size);
                if c.block != b || c.prev != prev {
                    return Err(format!("{here}: bad links"));
                }
                if c.offset != at || c.size == 0 || !c.size.is_multiple_of(self.unit) {
                    return Err(format!(
                        "{here}: expected offset {at}, a non-empty multiple of {}",
                        self.unit
                    ));
                }
                at = c.end();
                match c.state {
                    State::Free => {
                        if prev_free {
                            return Err(format!("{here}: two free chunks touch (not coalesced)"));
                        }
                        free_ids.insert(id);
                        free_bytes[blk.class as usize] += c.size;
                    }
                    State::Held => return Err(format!("{here}: held outside a compaction")),
                    State::Used => {
                        live += 1;
                        used += c.size;
                        pinned += u32::from(c.pinned);
                        if let Some(key) = c.owner {
                            if !owns(key, id) {
                                return Err(format!("{here}: its owner does not live here"));
                            }
                        } else if !c.pinned {
                            return Err(format!("{here}: released but not pinned"));
                        }
                    }
                }
                prev_free = c.state == State::Free;
                prev = id;
            }
            if prev != blk.last {
                return Err(format!(
                    "block {b}: last chunk recorded {}, found {prev}",
                    blk.last
                ));
            }
            if at != blk.size {
                return Err(format!(
                    "block {b}: chunks cover {at} of {} bytes",
                    blk.size
                ));
            }
            if (live, used, pinned) != (blk.live, blk.used, blk.pinned) {
                return Err(format!(
                    "block {b}: counted (live, used, pinned) {:?}, recount {:?}",
                    (blk.live, blk.used, blk.pinned),
                    (live, used, pinned)
                ));
            }
            if live == 0 {
                empty += blk.size;
                if self.chunks[blk.first].size != blk.size {
                    return Err(format!("block {b}: empty but not one free range"));
                }
            }
        }
        for (class, index) in self.free.iter().enumerate() {
            let ids = index.ids(&self.chunks);
            if ids.len() != index.count || index.bytes != free_bytes[class] {
                return Err(format!(
                    "class {class} index: {} chunks / {} bytes recorded, {} / {} found",
                    index.count,
                    index.bytes,
                    ids.len(),
                    free_bytes[class]
                ));
            }
            for (id, right_bin) in ids {
                if !free_ids.remove(&id) || !right_bin {
                    return Err(format!("class {class} index: chunk {id} misfiled"));
                }
            }
        }
        if !free_ids.is_empty() {
            return Err(format!("free chunks missing from the index: {free_ids:?}"));
        }
        if (empty, reserved, count) != (self.empty_bytes, self.reserved, self.block_count) {
            return Err(format!(
                "recorded (empty, reserved, blocks) {:?}, recount {:?}",
                (self.empty_bytes, self.reserved, self.block_count),
                (empty, reserved, count)
            ));
        }
        self.check_unmapped()
    }
}
