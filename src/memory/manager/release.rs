//! Giving memory back: released allocations return to their pool (device memory at once, in
//! queue order; host-visible memory and memory other streams still use once that work
//! passed), cached blocks and segment ends past the release threshold go back to the device.

use std::time::Instant;

use super::super::pool::{Placement, PoolBlock};
use super::super::release::PendingFree;
use super::super::streams::HeldUse;
use super::emit::{Change, DriverCall};
use super::{Allocation, Manager};
use crate::backend::{Storage, StreamRef};
use crate::types::error::{Error, Result, StaleReason};
use crate::types::{MemoryKind, QueueIndex};
use crate::BufferHandle;

impl<B: Storage> Manager<B> {
    /// Gives a block back to the device, once the last work that used it (`fence`: released
    /// allocations' work and compaction copies) has run. If waiting fails (a lost device),
    /// the block is not freed: what the device may still run could use it.
    pub(in crate::memory) fn free_block(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        block: PoolBlock<B::Block>,
    ) {
        let (start, streams_waited) = (Instant::now(), self.streams.waited);
        let waited = if block.fence == 0 {
            Ok(())
        } else {
            backend.wait(block.fence)
        };
        // Work of other streams on memory released here passes first.
        let waited = waited.and_then(|()| {
            if self.streams.active {
                self.streams.settle(backend, None, true).map(|_| ())
            } else {
                Ok(())
            }
        });
        // Pages given back inside it were counted when they went.
        let held = block.size - block.unmapped.bytes;
        self.emit(Change::BlockFreed { kind, bytes: held });
        match waited {
            // SAFETY: the block's last work (`fence`) has finished, and no allocation lives in
            // it any more.
            Ok(()) => unsafe { backend.free_block(block.raw) },
            Err(e) => {
                log::warn!("vramkit: leaking a {}-byte block: {e}", block.size);
                std::mem::forget(block.raw);
                self.deferred_error.get_or_insert(e);
            }
        }
        // Stream waits are counted on their own.
        let streams = self.streams.waited.saturating_sub(streams_waited);
        self.emit(Change::DriverCall {
            call: DriverCall::GiveBack,
            took: start.elapsed().saturating_sub(streams),
        });
    }

    /// Frees empty blocks of `kind` until the empty ones hold at most `keep` bytes. Unless
    /// `wait`, only blocks whose last work has completed go (the rest stay cached for now), so
    /// that a release under a finite threshold never waits for the GPU.
    pub(super) fn release_empty(&mut self, backend: &B, kind: MemoryKind, keep: u64, wait: bool) {
        // Other streams' releases must have passed too; without `wait`, a block goes only
        // when they have.
        if self.streams.active
            && !wait
            && !self.streams.settle(backend, None, false).unwrap_or(false)
        {
            return;
        }
        let done = |fence| wait || fence == 0 || backend.is_done(fence).unwrap_or(false);
        for b in self.pools[kind.index()].take_empty(keep, done) {
            self.free_block(backend, kind, b);
        }
    }

    /// Returns a placement's chunk to its pool, then applies the release threshold.
    pub(super) fn free_placement(&mut self, backend: &B, kind: MemoryKind, p: Placement) {
        let keep = self.settings.release_threshold;
        let pool = &mut self.pools[kind.index()];
        // Freed after every release counted so far: given back to the device only once every
        // stream passed them (`Streams::horizon`).
        pool.stamp = self.streams.seq;
        if pool.free(p.chunk).is_some() && pool.empty_bytes > keep {
            self.release_empty(backend, kind, keep, false);
        }
        let pool = &self.pools[kind.index()];
        if keep != u64::MAX
            && pool.block(p.block).is_some_and(|b| {
                b.segment && (b.fence == 0 || backend.is_done(b.fence).unwrap_or(false))
            })
            && pool.tail_free(p.block) > keep
            && (!self.streams.active || self.streams.settle(backend, None, false).unwrap_or(false))
        {
            // A failed shrink leaves the memory where it is: the release itself succeeded, and
            // the error waits for the next call that can fail.
            if let Err(e) = self.shrink_segments(backend, kind, keep) {
                self.deferred_error.get_or_insert(e);
            }
        }
        self.pages_past_threshold(backend, kind);
    }

    pub fn release(&mut self, backend: &B, h: BufferHandle) -> Result<()> {
        if h.context != self.context {
            return Err(Error::StaleHandle {
                reason: StaleReason::ForeignContext,
            });
        }
        let Some(a) = self.allocs.remove(h.key) else {
            return Err(Error::StaleHandle {
                reason: StaleReason::Released,
            });
        };
        self.emit(Change::Release {
            kind: a.kind,
            tag: a.tag,
            requested: a.requested,
            size: a.placement.size,
            label: &a.label,
        });
        if self.leases.is_leased(h.key) {
            // A pointer to it still lives outside: it stays where it is until the last lease
            // ends (`collect`).
            self.pools[a.kind.index()].orphan(a.placement.chunk);
            self.leased.insert(h.key, a);
            return Ok(());
        }
        self.give_back(backend, a)
    }

    /// The rest of a release, once no lease holds the allocation: back to its pool in queue
    /// order, or held for the streams that still use it.
    pub(super) fn give_back(&mut self, backend: &B, a: Allocation) -> Result<()> {
        if !self.streams.active {
            return self.deferred_or_free(backend, a.kind, a.placement, a.last_use);
        }
        if a.uses.is_empty() {
            // Counted first: what the release frees past the threshold (blocks, segment
            // ends, pages) must wait for the releasing stream too.
            self.on_stream_release(a.stream, a.last_use);
            return self.deferred_or_free(backend, a.kind, a.placement, a.last_use);
        }
        // Other streams still use it: it waits for them where it is.
        self.pools[a.kind.index()].orphan(a.placement.chunk);
        let held = HeldUse::new(a.kind, a.placement, a.stream, a.last_use);
        if let Err(e) = self.streams.hold(backend, &a.uses, held) {
            // No mark could be recorded (a lost device): the range stays out of use.
            log::warn!(
                "vramkit: keeping {} released bytes out of use: {e}",
                a.placement.size
            );
            return Err(e);
        }
        Ok(())
    }

    /// Counts a release on `stream` (and on vramkit's own queue, if its work `last_use`
    /// used the memory too).
    pub(super) fn on_stream_release(&mut self, stream: StreamRef, last_use: QueueIndex) {
        self.streams.on_release(stream);
        if last_use != 0 && stream != StreamRef::Own {
            self.streams.on_release(StreamRef::Own);
        }
    }

    /// Confirms the releases on `stream` (waiting) and forgets it
    /// ([`Interop::forget_stream`](crate::interop::Interop::forget_stream)).
    pub fn forget_stream(&mut self, backend: &B, stream: StreamRef) -> Result<()> {
        self.collect(backend)?;
        self.streams.forget(backend, stream)
    }

    /// Declares that `stream` uses the allocation too: released, it is reused only after
    /// `stream` passed the release.
    pub fn record_stream(&mut self, h: BufferHandle, stream: StreamRef) -> Result<()> {
        let a = self.get(h)?;
        let StreamRef::Foreign(s) = stream else {
            // vramkit's own work is tracked by its submissions.
            return Ok(());
        };
        if a.stream == stream || a.uses.contains(&s) {
            return Ok(());
        }
        if !self.streams.active {
            return Err(Error::Unsupported {
                what: "recording a stream on an allocation made for vramkit's own queue".into(),
                reason:
                    "allocations used on foreign streams are made on one with Interop::alloc_on"
                        .into(),
            });
        }
        if let Some(a) = self.allocs.get_mut(h.key) {
            a.uses.push(s);
        }
        Ok(())
    }

    /// Frees a placement. Device memory is reused at once in queue order, as PyTorch reuses
    /// memory on one stream: the queue runs pending work on the old contents before any work
    /// recorded later, and the host reaches device memory only through the queue; the block
    /// remembers the work (`fence`), so it is not given back before that work completes.
    /// Host-visible memory, which the host writes directly, comes back after the submission
    /// that last used it (it stays where it is, and may not move, until then).
    pub(super) fn deferred_or_free(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        placement: Placement,
        last_use: QueueIndex,
    ) -> Result<()> {
        if last_use != 0 && !kind.host_visible() {
            if let Some(b) = self.pools[kind.index()].block_mut(placement.block) {
                b.fence = b.fence.max(last_use);
            }
            self.free_placement(backend, kind, placement);
        } else if last_use == 0 || backend.is_done(last_use)? {
            self.free_placement(backend, kind, placement);
        } else {
            self.pools[kind.index()].orphan(placement.chunk);
            self.deferred.push(PendingFree {
                after: last_use,
                kind,
                placement,
            });
        }
        Ok(())
    }
}
