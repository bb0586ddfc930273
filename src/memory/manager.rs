//! The memory manager: pools, handles, budget, release, compaction and counters, written once
//! over any [`Storage`].
//!
//! Released device memory goes back to its pool at once: every backend runs its work on one
//! in-order queue (a CUDA stream, a wgpu queue, the host synchronously) and reaches device
//! memory only through it, so work recorded after a release runs after the work that used the
//! memory, as PyTorch's caching allocator reuses memory on one stream. The block keeps the last
//! such submission (`fence`) and is given back, or its segment end shrunk, only after it
//! completes. Host-visible memory, which the host writes directly, returns only after its last
//! submission (`release`). Keeping released device memory out of use until the GPU caught up
//! cost the CUDA replays up to 9× their live peak in reserved memory, since each compaction's
//! copies pinned what they touched.
//!
//! A request takes the best free range of its class across every block of its kind
//! ([`pool`](super::pool)). When none holds it, in this order: compaction into a window of an
//! existing block when the free ranges add up to the request (`compaction.before_growth`), a new
//! block sized by the [geometry](super::geometry) within the budget, and under pressure (budget
//! or device out of memory) everything that avoids failing, cheapest first: waiting for pending
//! releases and freeing cached blocks, the other class's free ranges, a compaction window in
//! any block, and evacuating sparse blocks to give their bytes back before growing
//! ([`compact`](self::compact)).

use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::sync::Arc;

use slotmap::SlotMap;

use super::budget::Budget;
use super::geometry::{Class, Geometry};
use super::handle::{BufferHandle, BufferKey};
use super::lease::LeaseBook;
use super::pool::{Placement, Pool};
use super::release::Deferred;
use super::stats::Counters;
use super::streams::Streams;
use super::trace::Recorder;
use super::AllocDesc;
use crate::backend::{ForeignStream, Storage, StreamRef};
use crate::types::error::{Error, Result, StaleReason};
use crate::types::Label;
use crate::types::{MemoryKind, QueueIndex};
use compact::CompactionDesc;
use emit::Change;

mod address;
mod collect;
pub(crate) mod compact;
pub(crate) mod emit;
mod inspect;
mod limits;
mod lost;
mod page_moves;
mod pages;
mod pin;
mod place;
mod release;
mod resolve;
mod room;
mod shrink;
mod textures;

pub(crate) use resolve::Access;
use textures::Textures;

pub(crate) struct Allocation {
    pub kind: MemoryKind,
    pub placement: Placement,
    pub requested: u64,
    pub label: Label,
    /// The last submission that uses this allocation (0: none).
    pub last_use: QueueIndex,
    /// The last submission that writes it (0: none): what a refusal of it loses (`lost.rs`).
    pub last_write: QueueIndex,
    /// Index of its tag in the counters.
    pub tag: u32,
    /// Allocation order, for checkpoints.
    pub seq: u64,
    /// Whether compaction may move it.
    pub movable: bool,
    /// Where it was allocated, with [`DebugSettings::backtraces`](crate::DebugSettings).
    pub backtrace: Option<Arc<Backtrace>>,
    /// The stream its work runs on.
    pub stream: StreamRef,
    /// Other streams that use it ([`Interop::record_stream`](crate::interop::Interop::record_stream)).
    pub uses: Vec<ForeignStream>,
    /// Why its contents are unknown: a submission that used it was refused (`lost.rs`).
    pub lost: Option<Arc<str>>,
}

/// How a manager behaves, from the context's description.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub geometry: Geometry,
    pub budget: Option<u64>,
    /// Bytes of empty blocks kept cached.
    pub release_threshold: u64,
    pub compaction: CompactionDesc,
    /// Give back free pages as the live set shrinks ([`ContextDesc::follow_live`](crate::ContextDesc::follow_live)).
    pub follow_live: bool,
    pub debug: crate::DebugSettings,
}

pub(crate) struct Manager<B: Storage> {
    pub(super) context: u32,
    pub(super) pools: [Pool<B::Block>; MemoryKind::COUNT],
    pub(super) allocs: SlotMap<BufferKey, Allocation>,
    textures: Textures<B::Texture>,
    deferred: Deferred,
    pub(super) streams: Streams,
    /// Device pointers' leases ([`lease`](super::lease)).
    pub(crate) leases: Arc<LeaseBook>,
    /// Released allocations whose pointers are still leased: held where they are.
    leased: HashMap<BufferKey, Allocation>,
    pub(super) budget: Budget,
    pub settings: Settings,
    pub(super) counters: Counters,
    /// Allocations made so far (the next one's `seq`).
    seq: u64,
    /// The timeline, while tracing.
    pub recorder: Option<Recorder>,
    /// An error of work that returns none (a release's segment shrink), for the next call
    /// that can fail.
    deferred_error: Option<Error>,
    /// Free bytes per kind that pages could not give back at the last try (`pages.rs`).
    page_floor: [u64; MemoryKind::COUNT],
}

pub(super) fn is_refusal(e: &Error) -> bool {
    matches!(e, Error::OverBudget { .. } | Error::OutOfMemory { .. })
}

impl<B: Storage> Manager<B> {
    pub fn new(context: u32, settings: Settings) -> Self {
        let unit = settings.geometry.unit;
        Self {
            context,
            pools: std::array::from_fn(|_| Pool::new(unit)),
            allocs: SlotMap::with_key(),
            textures: Textures::default(),
            deferred: Deferred::default(),
            streams: Streams::default(),
            leases: Arc::new(LeaseBook::default()),
            leased: HashMap::new(),
            budget: Budget::new(settings.budget),
            settings,
            counters: Counters::default(),
            seq: 0,
            recorder: None,
            deferred_error: None,
            page_floor: [0; MemoryKind::COUNT],
        }
    }

    /// `Err` with an error recorded where none could be returned, once.
    pub fn check_deferred(&mut self) -> Result<()> {
        self.deferred_error.take().map_or(Ok(()), Err)
    }

    /// Keeps an error of a call that could return none (a `Drop`) for the next call that can
    /// fail, unless an earlier one waits there.
    pub fn defer_error(&mut self, e: Error) {
        log::warn!("vramkit: {e} (returned by the next call that can fail)");
        self.deferred_error.get_or_insert(e);
    }

    /// The live allocation behind a handle.
    #[inline]
    pub fn get(&self, h: BufferHandle) -> Result<&Allocation> {
        if h.context != self.context {
            return Err(Error::StaleHandle {
                reason: StaleReason::ForeignContext,
            });
        }
        match self.allocs.get(h.key) {
            Some(a) => Ok(a),
            None => Err(Error::StaleHandle {
                reason: StaleReason::Released,
            }),
        }
    }

    /// Records that submission `index` uses the allocation, and may write it.
    pub fn touch(&mut self, h: BufferHandle, index: QueueIndex) {
        if let Some(a) = self.allocs.get_mut(h.key) {
            a.last_use = a.last_use.max(index);
            a.last_write = a.last_write.max(index);
        }
    }

    /// Records that submission `index` only reads the allocation.
    pub fn touch_read(&mut self, h: BufferHandle, index: QueueIndex) {
        if let Some(a) = self.allocs.get_mut(h.key) {
            a.last_use = a.last_use.max(index);
        }
    }

    pub fn alloc(&mut self, backend: &B, desc: AllocDesc) -> Result<BufferHandle> {
        self.alloc_on(backend, desc, StreamRef::Own)
    }

    /// Allocates for work on `stream` (see [`streams`](super::streams)).
    pub fn alloc_on(
        &mut self,
        backend: &B,
        desc: AllocDesc,
        stream: StreamRef,
    ) -> Result<BufferHandle> {
        let label = &desc.label;
        if desc.size == 0 {
            return Err(Error::ZeroSize {
                label: label.to_string(),
            });
        }
        if desc.kind == MemoryKind::Texture {
            return Err(Error::Unsupported {
                what: format!("`{label}`: a buffer of kind Texture"),
                reason: "textures have a size and a format: use ctx.textures().alloc".into(),
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
        self.check_deferred()?;
        backend.supports(desc.kind)?;
        let max = backend.limits().max_block_size;
        // `unit` is a power of two.
        let mask = self.settings.geometry.unit - 1;
        if desc.size.checked_add(mask).is_none_or(|s| s & !mask > max) {
            return Err(Error::TooLarge {
                label: label.to_string(),
                requested: desc.size,
                max,
                unit: "bytes",
                what: "largest buffer the device can create, after rounding the request up to \
                       whole allocation units (the device's offset alignment)",
            });
        }
        let size = (desc.size + mask) & !mask;
        if let StreamRef::Foreign(s) = stream {
            if !backend.foreign_streams() {
                // The backend's own error names the stream and what to use instead.
                backend.mark_stream(s)?;
            }
            self.streams.activate();
        }
        self.collect(backend)?;
        if self.streams.active {
            self.streams.settle(backend, Some(stream), true)?;
        }
        let on = stream.foreign();
        let mut placed = self.place_mapped(backend, desc.kind, (desc.size, size), on);
        if placed.as_ref().is_err_and(is_refusal) && self.reclaim(backend)? {
            // Pages of the place found could not be mapped again: pending releases done and
            // free pages given back, once more.
            placed = self.place_mapped(backend, desc.kind, (desc.size, size), on);
        }
        let placement = match placed {
            Ok(p) => p,
            Err(e) => {
                self.count_error(desc.kind, &e);
                return Err(match e {
                    // Name the request, not the block the pool tried to make for it.
                    Error::OutOfMemory {
                        requested: block,
                        kind,
                        detail,
                    } => {
                        // What the context holds, as a budget refusal says it.
                        let (free, largest) = self.pools[kind.index()].free_space();
                        let free = free.saturating_sub(self.pools[kind.index()].unmapped_bytes);
                        let c = &self.counters;
                        Error::OutOfMemory {
                            requested: desc.size,
                            kind,
                            detail: format!(
                                "`{label}`: the pool asked the device for {block} bytes: \
                                 {detail}; this context holds {} bytes, {} in use by live \
                                 allocations, {free} free in holes, the largest free range \
                                 {largest} bytes",
                                c.reserved, c.in_use
                            ),
                        }
                    }
                    e => e,
                });
            }
        };
        let kind = desc.kind;
        if self.streams.active {
            // A new block's or a growth's clear on vramkit's own queue passes first; and a
            // clear of reused memory, on that queue, comes after every stream's work on it
            // (its own stream's too).
            let on = match (desc.zeroed, stream) {
                (true, StreamRef::Foreign(_)) => None,
                _ => Some(stream),
            };
            if let Err(e) = self.streams.settle(backend, on, true) {
                self.free_placement(backend, kind, placement);
                return Err(e);
            }
        }
        // Memory the host writes directly must wait for copies still reading its old contents
        // (a compaction's source); device memory is only reached through the queue, in order.
        let mut last_use = if kind.host_visible() {
            self.pools[kind.index()]
                .block(placement.block)
                .map_or(0, |b| b.fence)
        } else {
            0
        };
        if let Err(e) = self.clear_dirty(backend, kind, &placement, desc.zeroed, &mut last_use) {
            // The range goes back; the clear may be recorded in part.
            self.deferred_or_free(backend, kind, placement, last_use)?;
            return Err(e);
        }
        let tag = self.counters.tag_index(desc.tag.as_ref());
        self.emit(Change::Alloc {
            kind,
            tag,
            requested: desc.size,
            size,
            label: &desc.label,
            detail: format_args!("block {} at {}", placement.block, placement.offset),
        });
        let seq = self.next_seq();
        let key = self.allocs.insert(Allocation {
            kind,
            placement,
            requested: desc.size,
            label: desc.label,
            last_use,
            last_write: last_use,
            tag,
            seq,
            movable: desc.movable,
            backtrace: (self.settings.debug.backtraces)
                .then(|| Arc::new(Backtrace::force_capture())),
            stream,
            uses: Vec::new(),
            lost: None,
        });
        self.pools[kind.index()].set_owner(placement.chunk, key, desc.movable);
        Ok(BufferHandle {
            key,
            context: self.context,
        })
    }

    /// Places a request and maps the pages of its place that went back. A place that would map
    /// pages again gives way to a free range near its size whose pages are all mapped, else to
    /// the place among those ranges that meets the fewest pages given back: memory held is
    /// used before the driver maps or moves more.
    fn place_mapped(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        (requested, size): (u64, u64),
        on: Option<ForeignStream>,
    ) -> Result<Placement> {
        let (mut p, searched) = match self.place_on_mapped(backend, kind, size) {
            Some(p) => (p, true),
            None => (self.place(backend, kind, (requested, size), on)?, false),
        };
        let pool = &mut self.pools[kind.index()];
        if !searched && pool.unmapped_bytes > 0 && pool.touches_unmapped(&p) {
            let better = take_mapped(pool, size, MAPPED_SCAN, Some(&p))
                .or_else(|| pool.take_least_unmapped(size, LEAST_SCAN, &p));
            if let Some(q) = better {
                // The place first found goes back as any release does (a block it empties
                // stays cached, or goes past the release threshold).
                let first = std::mem::replace(&mut p, q);
                self.free_placement(backend, kind, first);
            }
        }
        match self.map_for(backend, kind, &p, requested, on) {
            Ok(()) => Ok(p),
            Err(e) => {
                self.free_placement(backend, kind, p);
                if !is_refusal(&e) {
                    return Err(e);
                }
                // The place chosen needs pages mapped again that the budget (or the device)
                // cannot give: any free range whose pages are all mapped takes nothing new.
                match take_mapped(&mut self.pools[kind.index()], size, usize::MAX, None) {
                    Some(p) => Ok(p),
                    // Measured again now that the place went back.
                    None => Err(match e {
                        Error::OverBudget { .. } => self.over_budget(backend, kind, requested),
                        e => e,
                    }),
                }
            }
        }
    }

    /// In a segment with pages given back, where the best free range's front meets some of
    /// them: a place on mapped pages (else the one that meets the fewest), found before anything
    /// is taken, so that the range first found is not taken and returned. `None` where the best
    /// free range's front is mapped, or no range holds `size` (`place` decides then).
    fn place_on_mapped(&mut self, backend: &B, kind: MemoryKind, size: u64) -> Option<Placement> {
        let pool = &mut self.pools[kind.index()];
        if pool.unmapped_bytes == 0 || !backend.resizable(kind) {
            return None;
        }
        let id = pool.find(Class::Large, size)?;
        let front = pool.front_unmapped(id, size);
        if front == 0 {
            return None;
        }
        if let Some(p) = take_mapped(pool, size, MAPPED_SCAN, None) {
            return Some(p);
        }
        match pool.least_unmapped_fit(size, LEAST_SCAN) {
            Some((best, skip, bytes)) if bytes < front => Some(pool.take_at(best, skip, size)),
            _ => Some(pool.take(id, size)),
        }
    }

    /// The next allocation's number (buffers and textures share the sequence).
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Clears the parts of a new placement that were handed out before, if it must read as
    /// zeros; either way they are marked handed out.
    fn clear_dirty(
        &mut self,
        backend: &B,
        kind: MemoryKind,
        placement: &Placement,
        zeroed: bool,
        last_use: &mut QueueIndex,
    ) -> Result<()> {
        let pool = &mut self.pools[kind.index()];
        if !zeroed {
            pool.take_dirty(placement, |_| {});
            return Ok(());
        }
        let mut dirty: [Option<std::ops::Range<u64>>; 2] = [None, None];
        let mut more = Vec::new();
        pool.take_dirty(placement, |r| {
            match dirty.iter_mut().find(|d| d.is_none()) {
                Some(slot) => *slot = Some(r),
                None => more.push(r),
            }
        });
        if let Some(b) = pool.block(placement.block) {
            for r in dirty.into_iter().flatten().chain(more) {
                // SAFETY: dirty ranges lie inside the placement, inside its block, in whole
                // units (multiples of the copy alignment).
                let index = unsafe { backend.clear(&b.raw, r.start, r.end - r.start)? };
                *last_use = (*last_use).max(index);
            }
        }
        Ok(())
    }

    /// Counts a refusal the caller sees (over budget, out of memory).
    pub fn count_error(&mut self, kind: MemoryKind, e: &Error) {
        let (over_budget, bytes) = match e {
            Error::OverBudget { requested, .. } => (true, *requested),
            Error::OutOfMemory { requested, .. } => (false, *requested),
            _ => return,
        };
        self.emit(Change::Refused {
            kind,
            over_budget,
            bytes,
        });
    }
}

/// Free ranges searched for the place that meets the fewest pages given back.
const LEAST_SCAN: usize = 16;

/// Free ranges a request that would map pages again tries for a place already mapped.
const MAPPED_SCAN: usize = 64;

/// Takes `size` bytes from a free range of `pool` none of whose pages were given back, among
/// the `limit` smallest that hold it (`held`: a placement taken, not mapped yet).
fn take_mapped<Blk>(
    pool: &mut Pool<Blk>,
    size: u64,
    limit: usize,
    held: Option<&Placement>,
) -> Option<Placement> {
    let (id, skip) = pool.mapped_fit(size, limit, held)?;
    Some(pool.take_at(id, skip, size))
}
