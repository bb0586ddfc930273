//! The memory manager: pools, handles, budget, deferred release and counters, written once over
//! any [`Backend`].

use std::backtrace::Backtrace;
use std::sync::Arc;

use slotmap::SlotMap;

use super::budget::Budget;
use super::handle::{BufferHandle, BufferKey};
use super::pool::{Placement, Pool, PoolBlock};
use super::release::{Deferred, PendingFree};
use super::stats::Counters;
use super::trace::{EventKind, Recorder};
use super::{AllocDesc, AllocationInfo, Label};
use crate::backend::{Backend, MemoryKind, SubmissionIndex};
use crate::error::{Error, Result, StaleReason};

mod inspect;

pub(crate) struct Allocation {
    pub kind: MemoryKind,
    pub placement: Placement,
    pub requested: u64,
    pub label: Label,
    /// The last submission that uses this allocation (0: none).
    pub last_use: SubmissionIndex,
    /// Index of its tag in the counters.
    pub tag: u32,
    /// Allocation order, for checkpoints.
    pub seq: u64,
    /// Where it was allocated, when `VRAMKIT_BACKTRACE=1`.
    pub backtrace: Option<Arc<Backtrace>>,
}

/// Pool geometry, derived from the backend's limits and the context's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    /// Bytes per sub-allocation unit (the offset alignment).
    pub unit: u64,
    /// Size of a shared block.
    pub block_size: u64,
    /// Requests above this get a dedicated block.
    pub dedicated: u64,
}

pub(crate) struct Manager<B: Backend> {
    context: u32,
    pools: [Pool<B::Block>; 4],
    allocs: SlotMap<BufferKey, Allocation>,
    deferred: Deferred,
    budget: Budget,
    pub geometry: Geometry,
    counters: Counters,
    /// Allocations made so far (the next one's `seq`).
    seq: u64,
    /// Capture where each allocation was made (`VRAMKIT_BACKTRACE=1`).
    backtraces: bool,
    /// The timeline, while tracing.
    pub recorder: Option<Recorder>,
}

/// Appends an event, if tracing: `delta` is the change of the kind's in-use bytes (alloc,
/// release) or reserved bytes (blocks, staging).
#[inline(always)]
fn record(
    recorder: &mut Option<Recorder>,
    what: EventKind,
    kind: MemoryKind,
    bytes: u64,
    delta: i64,
    label: impl FnOnce() -> Label,
) {
    if let Some(r) = recorder {
        r.push(what, kind, bytes, delta, label());
    }
}

impl<B: Backend> Manager<B> {
    pub fn new(context: u32, geometry: Geometry, budget: Option<u64>) -> Self {
        Self {
            context,
            pools: std::array::from_fn(|_| Pool::new(geometry.unit)),
            allocs: SlotMap::with_key(),
            deferred: Deferred::default(),
            budget: Budget::new(budget),
            geometry,
            counters: Counters::default(),
            seq: 0,
            backtraces: std::env::var("VRAMKIT_BACKTRACE").is_ok_and(|v| v == "1"),
            recorder: None,
        }
    }

    /// The live allocation behind a handle.
    pub fn get(&self, h: BufferHandle) -> Result<&Allocation> {
        if h.context != self.context {
            return Err(Error::StaleHandle {
                reason: StaleReason::ForeignContext,
            });
        }
        self.allocs.get(h.key).ok_or(Error::StaleHandle {
            reason: StaleReason::Released,
        })
    }

    /// The raw block an allocation lives in.
    pub fn raw(&self, a: &Allocation) -> Result<&B::Block> {
        self.pools[a.kind.index()]
            .blocks
            .get(a.placement.block)
            .map(|b| &b.raw)
            .ok_or_else(|| Error::Backend {
                message: format!("allocation `{}` lost its block (a vramkit bug)", a.label),
            })
    }

    /// Records that submission `index` uses the allocation.
    pub fn touch(&mut self, h: BufferHandle, index: SubmissionIndex) {
        if let Some(a) = self.allocs.get_mut(h.key) {
            a.last_use = a.last_use.max(index);
        }
    }

    pub fn alloc(&mut self, backend: &B, desc: AllocDesc) -> Result<BufferHandle> {
        let label = &desc.label;
        if desc.size == 0 {
            return Err(Error::ZeroSize {
                label: label.to_string(),
            });
        }
        if matches!(desc.kind, MemoryKind::Upload | MemoryKind::Readback) {
            return Err(Error::Unsupported {
                what: format!("`{label}`: allocating {:?} memory", desc.kind),
                reason: "staging memory is managed by the context; allocate Device or Unified \
                         memory and use upload/download"
                    .into(),
            });
        }
        backend.check_device()?;
        backend.supports(desc.kind)?;
        let max = backend.limits().max_block_size;
        let size = desc.size.next_multiple_of(self.geometry.unit);
        if desc.size > max || size > max {
            return Err(Error::TooLarge {
                label: label.to_string(),
                requested: desc.size,
                max,
                what: "largest buffer the device can create",
            });
        }
        self.collect(backend)?;
        let placement = match self.place(backend, desc.kind, desc.size, size) {
            Ok(p) => p,
            Err(Error::OverBudget { .. } | Error::OutOfMemory { .. })
                if self.reclaim(backend)? =>
            {
                self.place(backend, desc.kind, desc.size, size)
                    .inspect_err(|e| self.count_error(desc.kind, e))?
            }
            Err(e) => {
                self.count_error(desc.kind, &e);
                return Err(e);
            }
        };
        let pool = &mut self.pools[desc.kind.index()];
        let mut dirty: [Option<std::ops::Range<u64>>; 2] = [None, None];
        let mut more = Vec::new();
        pool.take_dirty(&placement, |r| {
            match dirty.iter_mut().find(|d| d.is_none()) {
                Some(slot) => *slot = Some(r),
                None => more.push(r),
            }
        });
        let mut last_use = 0;
        if desc.zeroed {
            if let Some(b) = pool.blocks.get(placement.block) {
                for r in dirty.into_iter().flatten().chain(more) {
                    match backend.clear(&b.raw, r.start, r.end - r.start) {
                        Ok(index) => last_use = index,
                        Err(e) => {
                            // The range goes back; the clear may be recorded in part.
                            self.deferred_or_free(backend, desc.kind, placement, last_use)?;
                            return Err(e);
                        }
                    }
                }
            }
        }
        log::trace!(
            "vramkit: alloc `{label}` {} B ({:?}) at {}",
            desc.size,
            desc.kind,
            placement.offset
        );
        let tag = self.counters.tag_index(desc.tag.as_ref());
        self.counters.on_alloc(desc.kind, tag, desc.size, size);
        record(
            &mut self.recorder,
            EventKind::Alloc,
            desc.kind,
            desc.size,
            size as i64,
            || desc.label.clone(),
        );
        self.seq += 1;
        let key = self.allocs.insert(Allocation {
            kind: desc.kind,
            placement,
            requested: desc.size,
            label: desc.label,
            last_use,
            tag,
            seq: self.seq,
            backtrace: self
                .backtraces
                .then(|| Arc::new(Backtrace::force_capture())),
        });
        Ok(BufferHandle {
            key,
            context: self.context,
        })
    }

    /// Counts a refusal the caller sees (over budget, out of memory).
    pub fn count_error(&mut self, kind: MemoryKind, e: &Error) {
        let (what, bytes) = match e {
            Error::OverBudget { requested, .. } => (EventKind::OverBudget, *requested),
            Error::OutOfMemory { requested, .. } => (EventKind::OutOfMemory, *requested),
            _ => return,
        };
        self.counters.on_error(kind, what == EventKind::OverBudget);
        record(&mut self.recorder, what, kind, bytes, 0, Label::default);
    }

    /// Finds room for `size` (aligned) bytes, growing the pool within the budget.
    fn place(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        requested: u64,
        size: u64,
    ) -> Result<Placement> {
        let g = self.geometry;
        let shareable = size <= g.dedicated;
        if shareable {
            if let Some(p) = self.pools[kind.index()].try_place(size) {
                return Ok(p);
            }
        }
        let headroom = self.budget.headroom(self.counters.reserved);
        if size > headroom {
            return Err(self.over_budget(kind, requested));
        }
        let (block, shared) =
            match Budget::shared_block(size, headroom, g.unit, g.block_size, g.dedicated) {
                Some(block) => (block, true),
                None => (size, false),
            };
        let raw = backend.alloc_block(block, kind)?;
        log::debug!("vramkit: new {kind:?} block of {block} B (shared: {shared})");
        self.counters.on_reserve(kind, block, true);
        record(
            &mut self.recorder,
            EventKind::BlockGrow,
            kind,
            block,
            block as i64,
            Label::default,
        );
        let pool = &mut self.pools[kind.index()];
        let key = pool.add_block(raw, block, shared);
        pool.place_in(key, size).ok_or_else(|| Error::Backend {
            message: format!("a fresh {block}-byte block refused {size} bytes (a vramkit bug)"),
        })
    }

    fn over_budget(&self, kind: MemoryKind, requested: u64) -> Error {
        let (_, largest_free) = self.pools[kind.index()].free_space();
        let headroom = self.budget.headroom(self.counters.reserved);
        Error::OverBudget {
            requested,
            limit: self.budget.limit,
            in_use: self.counters.in_use,
            reserved: self.counters.reserved,
            largest_free,
            fits_now: largest_free.max(headroom / self.geometry.unit * self.geometry.unit),
        }
    }

    fn free_block(&mut self, backend: &B, kind: MemoryKind, block: PoolBlock<B::Block>) {
        self.counters.on_reserve(kind, block.size, false);
        record(
            &mut self.recorder,
            EventKind::BlockTrim,
            kind,
            block.size,
            -(block.size as i64),
            Label::default,
        );
        backend.free_block(block.raw);
    }

    /// Returns a placement to its pool, freeing a dedicated block and all but one empty block.
    fn free_placement(&mut self, backend: &B, kind: MemoryKind, p: Placement) {
        let pool = &mut self.pools[kind.index()];
        let (dedicated, emptied) = pool.free(p);
        if let Some(b) = dedicated {
            self.free_block(backend, kind, b);
        }
        if emptied {
            for b in self.pools[kind.index()].take_empty(1) {
                self.free_block(backend, kind, b);
            }
        }
    }

    pub fn release(&mut self, backend: &B, h: BufferHandle) -> Result<()> {
        self.get(h)?;
        let Some(a) = self.allocs.remove(h.key) else {
            return Err(Error::StaleHandle {
                reason: StaleReason::Released,
            });
        };
        log::trace!("vramkit: release `{}` {} B", a.label, a.requested);
        self.counters
            .on_release(a.kind, a.tag, a.requested, a.placement.size);
        record(
            &mut self.recorder,
            EventKind::Release,
            a.kind,
            a.requested,
            -(a.placement.size as i64),
            || a.label,
        );
        self.deferred_or_free(backend, a.kind, a.placement, a.last_use)
    }

    /// Frees a placement now if no pending submission uses it, else after that submission.
    fn deferred_or_free(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        placement: Placement,
        last_use: SubmissionIndex,
    ) -> Result<()> {
        if last_use == 0 || backend.is_done(last_use)? {
            self.free_placement(backend, kind, placement);
        } else {
            self.deferred.push(PendingFree {
                after: last_use,
                kind,
                placement,
            });
        }
        Ok(())
    }

    /// Returns released memory whose submissions have completed to the pools.
    pub fn collect(&mut self, backend: &B) -> Result<()> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        for p in self.deferred.take_done(backend)? {
            self.free_placement(backend, p.kind, p.placement);
        }
        Ok(())
    }

    /// Waits for pending releases and frees empty blocks. Returns whether memory came back.
    fn reclaim(&mut self, backend: &B) -> Result<bool> {
        let before = self.counters.reserved;
        let had_pending = !self.deferred.is_empty();
        if let Some(last) = self.deferred.last() {
            backend.wait(last)?;
            self.collect(backend)?;
        }
        self.trim_pools(backend);
        Ok(had_pending || self.counters.reserved < before)
    }

    fn trim_pools(&mut self, backend: &B) {
        for kind in MemoryKind::ALL {
            for b in self.pools[kind.index()].take_empty(0) {
                self.free_block(backend, kind, b);
            }
        }
    }

    /// Frees every empty block after waiting for pending releases. Returns the bytes freed.
    pub fn trim(&mut self, backend: &B) -> Result<u64> {
        let before = self.counters.reserved;
        self.reclaim(backend)?;
        Ok(before - self.counters.reserved)
    }

    /// Reserves a staging buffer within the budget. A refusal is not counted here: the ring
    /// usually carries on with the slots it has ([`count_error`](Self::count_error) when not).
    pub fn reserve_staging(
        &mut self,
        backend: &B,
        size: u64,
        kind: MemoryKind,
    ) -> Result<B::Block> {
        if size > self.budget.headroom(self.counters.reserved) {
            self.reclaim(backend)?;
            if size > self.budget.headroom(self.counters.reserved) {
                return Err(self.over_budget(kind, size));
            }
        }
        let raw = backend.alloc_block(size, kind)?;
        self.counters.on_reserve(kind, size, true);
        record(
            &mut self.recorder,
            EventKind::StagingGrow,
            kind,
            size,
            size as i64,
            Label::default,
        );
        let s = &mut self.counters.staging[kind.index()];
        s.0 += size;
        s.1 += 1;
        Ok(raw)
    }

    /// Returns a staging buffer's bytes to the budget (the caller frees the block).
    pub fn unreserve_staging(&mut self, size: u64, kind: MemoryKind) {
        self.counters.on_reserve(kind, size, false);
        record(
            &mut self.recorder,
            EventKind::StagingTrim,
            kind,
            size,
            -(size as i64),
            Label::default,
        );
        let s = &mut self.counters.staging[kind.index()];
        s.0 -= size;
        s.1 -= 1;
    }

    /// How many more allocations of `item` bytes of `kind` would succeed now.
    pub fn max_batch(&mut self, backend: &B, item: u64, kind: MemoryKind) -> Result<u64> {
        if item == 0 {
            return Err(Error::ZeroSize {
                label: "max_batch".into(),
            });
        }
        self.collect(backend)?;
        let g = self.geometry;
        let size = item.next_multiple_of(g.unit);
        // Without a budget, the device's free memory (where the API tells) is the limit.
        let mut headroom = self.budget.headroom(self.counters.reserved);
        if let Some(info) = backend.memory_info() {
            headroom = headroom.min(info.free);
        }
        let in_new = Budget::items_in_new_blocks(headroom, size, g.unit, g.block_size, g.dedicated);
        let in_pool = if size <= g.dedicated {
            self.pools[kind.index()].count_fits(size, 1 << 20)
        } else {
            0
        };
        Ok(in_new.saturating_add(in_pool))
    }

    /// Frees every block at shutdown (the caller has waited for the device). Returns what leaked.
    pub fn shutdown(&mut self, backend: &B) -> Vec<AllocationInfo> {
        let leaks = self.live_since(0, true);
        self.allocs.clear();
        for kind in MemoryKind::ALL {
            self.pools[kind.index()].flush();
            let keys: Vec<_> = self.pools[kind.index()].blocks.keys().collect();
            for k in keys {
                if let Some(b) = self.pools[kind.index()].blocks.remove(k) {
                    self.free_block(backend, kind, b);
                }
            }
        }
        leaks
    }
}
