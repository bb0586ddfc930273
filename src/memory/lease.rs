//! Leases: device pointers and wgpu bindings handed to code outside vramkit
//! ([`Interop::device_ptr`](crate::interop::Interop::device_ptr), `Interop::wgpu_binding`) keep their range out of reuse while they
//! live. A lease counts itself in the context's book when
//! made and cloned, and leaves it when dropped, without the manager's lock; the manager reads
//! the book when an allocation is released (a leased one is held where it is) and collects
//! the leases that ended on its next operation.
//!
//! [`Interop::device_ptr`](crate::interop::Interop::device_ptr): crate::Interop::device_ptr

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::handle::BufferKey;
use crate::types::lock;

/// Live leases by allocation, and allocations whose last lease ended.
#[derive(Default)]
pub(crate) struct LeaseBook {
    counts: Mutex<HashMap<BufferKey, u32>>,
    ended: Mutex<Vec<BufferKey>>,
    /// Live leases in all (read without a lock on the release path).
    live: AtomicUsize,
}

impl LeaseBook {
    /// One more lease on `key`.
    pub fn take(&self, key: BufferKey) {
        *lock(&self.counts).entry(key).or_insert(0) += 1;
        self.live.fetch_add(1, Ordering::AcqRel);
    }

    /// A lease on `key` ended.
    pub fn end(&self, key: BufferKey) {
        let mut counts = lock(&self.counts);
        let last = match counts.get_mut(&key) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                counts.remove(&key);
                true
            }
            None => false,
        };
        drop(counts);
        self.live.fetch_sub(1, Ordering::AcqRel);
        if last {
            lock(&self.ended).push(key);
        }
    }

    /// Live leases in all.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Whether `key` is leased now.
    pub fn is_leased(&self, key: BufferKey) -> bool {
        self.live() > 0 && lock(&self.counts).contains_key(&key)
    }

    /// The allocations whose last lease ended since the last call.
    pub fn take_ended(&self) -> Vec<BufferKey> {
        std::mem::take(&mut *lock(&self.ended))
    }

    /// Whether a lease ended since the last [`take_ended`](Self::take_ended).
    pub fn any_ended(&self) -> bool {
        !lock(&self.ended).is_empty()
    }
}

/// One lease on one allocation: counted in the book while it (or a clone) lives.
pub(crate) struct Lease {
    book: Arc<LeaseBook>,
    key: BufferKey,
}

impl Lease {
    /// Takes a lease on `key`; call it under the manager's lock, which a release takes too.
    pub fn take(book: &Arc<LeaseBook>, key: BufferKey) -> Self {
        book.take(key);
        Self {
            book: Arc::clone(book),
            key,
        }
    }
}

impl Clone for Lease {
    fn clone(&self) -> Self {
        Self::take(&self.book, self.key)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.book.end(self.key);
    }
}
