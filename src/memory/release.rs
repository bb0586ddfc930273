//! Deferred release of host-visible memory: memory that pending GPU work still uses returns to
//! its pool only after that work completes, since the host writes such memory directly. Until
//! then its range stays used and may not move. (Device memory is reused in queue order at once;
//! see the [manager](super::manager).)

use std::collections::VecDeque;

use super::pool::Placement;
use crate::backend::Storage;
use crate::types::error::Result;
use crate::types::{MemoryKind, QueueIndex};

pub(crate) struct PendingFree {
    pub after: QueueIndex,
    pub kind: MemoryKind,
    pub placement: Placement,
}

/// Releases waiting for their submissions, in submission order.
#[derive(Default)]
pub(crate) struct Deferred {
    queue: VecDeque<PendingFree>,
    pub bytes: u64,
}

impl Deferred {
    pub fn push(&mut self, p: PendingFree) {
        self.bytes += p.placement.size;
        let at = self.queue.partition_point(|q| q.after <= p.after);
        self.queue.insert(at, p);
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The last submission a pending release waits for.
    pub fn last(&self) -> Option<QueueIndex> {
        self.queue.back().map(|p| p.after)
    }

    /// Takes the releases whose submissions have completed.
    pub fn take_done<B: Storage>(&mut self, backend: &B) -> Result<Vec<PendingFree>> {
        let mut done = Vec::new();
        while let Some(front) = self.queue.front() {
            if !backend.is_done(front.after)? {
                break;
            }
            let after = front.after;
            while self.queue.front().is_some_and(|p| p.after == after) {
                if let Some(p) = self.queue.pop_front() {
                    self.bytes -= p.placement.size;
                    done.push(p);
                }
            }
        }
        Ok(done)
    }
}
