//! Giving memory back: released allocations whose submissions completed return to the pools
//! (`collect`), free blocks go back to the device (`trim`), and a dropped context frees what it
//! held and lists what leaked (`shutdown`).

use super::Manager;
use crate::backend::Storage;
use crate::memory::manager::compact::Goal;
use crate::memory::AllocationInfo;
use crate::types::error::Result;
use crate::types::MemoryKind;

impl<B: Storage> Manager<B> {
    /// Returns released memory whose submissions have completed to the pools.
    pub fn collect(&mut self, backend: &B) -> Result<()> {
        self.note_refusals(backend);
        self.collect_textures(backend, false)?;
        if self.leases.any_ended() {
            self.collect_leased(backend)?;
        }
        if self.streams.has_held() {
            self.collect_held(backend, false)?;
        }
        if self.deferred.is_empty() {
            return Ok(());
        }
        for p in self.deferred.take_done(backend)? {
            self.free_placement(backend, p.kind, p.placement);
        }
        Ok(())
    }

    /// Gives back released allocations whose last lease ended.
    pub(super) fn collect_leased(&mut self, backend: &B) -> Result<()> {
        for key in self.leases.take_ended() {
            // Leased again since that lease ended (a lease taken and dropped while the
            // allocation lived, then another before its release): the last one brings it back.
            if self.leases.is_leased(key) {
                continue;
            }
            if let Some(a) = self.leased.remove(&key) {
                // The orphaned chunk goes back through the usual path: it is used, with no
                // owner, as a released allocation still in use is.
                self.give_back(backend, a)?;
            }
        }
        Ok(())
    }

    /// Returns released memory whose other streams have passed (all of it, waiting, with
    /// `wait`) to the pools, as a release on its own stream.
    fn collect_held(&mut self, backend: &B, wait: bool) -> Result<()> {
        for h in self.streams.take_passed(backend, wait)? {
            // Its own stream's release is counted first (see `release`).
            self.on_stream_release(h.stream, h.last_use);
            self.deferred_or_free(backend, h.kind, h.placement, h.last_use)?;
        }
        Ok(())
    }

    /// Waits for pending releases and frees every empty block. Returns whether memory came
    /// back.
    pub(super) fn reclaim(&mut self, backend: &B) -> Result<bool> {
        let before = self.counters.reserved;
        let had_pending = !self.deferred.is_empty()
            || self.textures.pending_bytes() > 0
            || self.streams.has_held();
        self.collect_textures(backend, true)?;
        self.collect_held(backend, true)?;
        if let Some(last) = self.deferred.last() {
            backend.wait(last)?;
            self.collect(backend)?;
        }
        for kind in MemoryKind::ALL {
            self.release_empty(backend, kind, 0, true);
            self.shrink_segments(backend, kind, 0)?;
            self.unmap_free_pages(backend, kind, u64::MAX, None, true)?;
        }
        // Under pressure the memory given back must be free before the device is asked again.
        backend.finish_unmaps();
        Ok(had_pending || self.counters.reserved < before)
    }

    /// Compacts every pool as far as it goes, then frees every empty block. Returns the bytes
    /// freed (0 when the moves ended up holding more than before).
    pub fn trim(&mut self, backend: &B) -> Result<u64> {
        self.check_deferred()?;
        let before = self.counters.reserved;
        self.reclaim(backend)?;
        for kind in [MemoryKind::Device, MemoryKind::Unified] {
            self.slide(backend, kind, u64::MAX, None, None)?;
            self.evacuate(backend, kind, Goal::All, u64::MAX)?;
        }
        self.reclaim(backend)?;
        let after = self.counters.reserved;
        if after > before {
            // The moves took more (a new block, pages mapped again) than the blocks and pages
            // they emptied gave back: nothing was freed.
            log::debug!("vramkit: trim ended holding {} bytes more", after - before);
        }
        Ok(before.saturating_sub(after))
    }

    /// Frees every block at shutdown (the caller has waited for the device). Returns what leaked.
    pub fn shutdown(&mut self, backend: &B) -> Vec<AllocationInfo> {
        let leaks = self.live_since(0, true);
        self.allocs.clear();
        self.drain_textures(backend);
        let leased = self.leases.live();
        if leased > 0 {
            log::warn!(
                "vramkit: the context is dropped while {leased} leases (device pointers, wgpu \
                 bindings) live: their blocks stay allocated so that they stay valid (on wgpu \
                 until the last binding is dropped; elsewhere for the process's life)"
            );
        }
        for kind in MemoryKind::ALL {
            let keep = leased > 0 && matches!(kind, MemoryKind::Device | MemoryKind::Unified);
            for b in self.pools[kind.index()].drain() {
                if keep {
                    backend.abandon_block(b.raw);
                    continue;
                }
                self.free_block(backend, kind, b);
            }
        }
        leaks
    }
}
