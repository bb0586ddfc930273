//! A reusable ring of mapped staging buffers for uploads and readbacks.
//!
//! Slots are made lazily, counted in the budget, and reused round-robin: a slot is written again
//! only after the submission that read it completes, so the host fills one slot while the device
//! copies from another. Transfers larger than the ring stream through it in slot-sized chunks.

use super::access::SharedManager;
use super::manager::Manager;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::{MemoryKind, QueueIndex};

pub(crate) struct Slot<Blk> {
    pub block: Blk,
    /// The submission that last used the slot (0: none).
    pub in_flight: QueueIndex,
}

/// One direction's ring.
pub(crate) struct Ring<Blk> {
    kind: MemoryKind,
    pub slot_size: u64,
    max_slots: usize,
    pub slots: Vec<Slot<Blk>>,
    next: usize,
}

impl<Blk> Ring<Blk> {
    pub fn new(kind: MemoryKind, slot_size: u64, max_slots: usize) -> Self {
        Self {
            kind,
            slot_size,
            max_slots: max_slots.clamp(1, 64),
            slots: Vec::new(),
            next: 0,
        }
    }

    /// The most bytes this ring may hold.
    pub fn capacity(&self) -> u64 {
        self.slot_size.saturating_mul(self.max_slots as u64)
    }

    /// The index of the slot to use next: a new one while the next in turn is busy and the ring
    /// and the budget allow, else the next in turn once its submission has completed. When the
    /// budget leaves no room for a first slot, the other direction's ring (`spare`) gives its
    /// slots back first.
    pub fn acquire<B: Storage<Block = Blk>>(
        &mut self,
        backend: &B,
        mem: &SharedManager<B>,
        spare: &mut Ring<Blk>,
    ) -> Result<usize> {
        let busy = match self.slots.get(self.next) {
            Some(s) => s.in_flight != 0 && !backend.is_done(s.in_flight)?,
            None => true,
        };
        if busy && self.slots.len() < self.max_slots {
            let mut reserved = mem
                .lock()
                .reserve_staging(backend, self.slot_size, self.kind);
            if self.slots.is_empty() && matches!(reserved, Err(Error::OverBudget { .. })) {
                let mut m = mem.lock();
                if spare.clear(backend, &mut m)? > 0 {
                    reserved = m.reserve_staging(backend, self.slot_size, self.kind);
                }
            }
            match reserved {
                Ok(block) => {
                    // The new slot is used now; `next` still names the oldest busy one.
                    self.slots.push(Slot {
                        block,
                        in_flight: 0,
                    });
                    return Ok(self.slots.len() - 1);
                }
                Err(e @ (Error::OverBudget { .. } | Error::OutOfMemory { .. }))
                    if self.slots.is_empty() =>
                {
                    mem.lock().count_error(self.kind, &e);
                    return Err(Error::Staging {
                        direction: if self.kind == MemoryKind::Upload {
                            "upload"
                        } else {
                            "download"
                        },
                        slot: self.slot_size,
                        source: Box::new(e),
                    });
                }
                Err(Error::OverBudget { .. } | Error::OutOfMemory { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let at = self.next;
        let slot = &mut self.slots[at];
        if slot.in_flight != 0 {
            backend.wait(slot.in_flight)?;
            slot.in_flight = 0;
        }
        self.next = (at + 1) % self.slots.len();
        Ok(at)
    }

    /// Frees every slot (waiting for their submissions). Returns the bytes freed.
    pub fn clear<B: Storage<Block = Blk>>(
        &mut self,
        backend: &B,
        mem: &mut Manager<B>,
    ) -> Result<u64> {
        let mut freed = 0;
        for slot in self.slots.drain(..) {
            if slot.in_flight != 0 {
                backend.wait(slot.in_flight)?;
            }
            mem.unreserve_staging(self.slot_size, self.kind);
            // SAFETY: the slot's last submission has finished (waited above); nothing else
            // uses a staging buffer.
            unsafe { backend.free_block(slot.block) };
            freed += self.slot_size;
        }
        self.next = 0;
        Ok(freed)
    }
}

/// Both directions' rings.
pub(crate) struct Staging<Blk> {
    pub upload: Ring<Blk>,
    pub readback: Ring<Blk>,
}

impl<Blk> Staging<Blk> {
    pub fn new(slot_size: u64, max_slots: usize) -> Self {
        Self {
            upload: Ring::new(MemoryKind::Upload, slot_size, max_slots),
            readback: Ring::new(MemoryKind::Readback, slot_size, max_slots),
        }
    }
}
