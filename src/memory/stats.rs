//! Counters of the memory manager, kept as it works (per kind and per tag), and the snapshots
//! [`Context::stats`](crate::Context::stats) returns.

use crate::types::Label;
use crate::types::MemoryKind;

/// Figures for one [`MemoryKind`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Bytes asked for by live allocations.
    pub requested: u64,
    /// Bytes held by live allocations, alignment padding included.
    pub in_use: u64,
    /// Bytes held in blocks of this kind (staging buffers included for `Upload`/`Readback`;
    /// pages given back inside segments not included).
    pub reserved: u64,
    /// Number of blocks (staging buffers included).
    pub blocks: usize,
    /// Number of live allocations.
    pub allocations: usize,
    /// Free bytes inside shared blocks that hold memory (pages given back not included).
    pub free: u64,
    /// The largest free range inside one shared block (an address range: pages given back
    /// inside it are mapped again when it is used).
    pub largest_free: u64,
    /// Highest `requested` seen.
    pub peak_requested: u64,
    /// Highest `in_use` seen.
    pub peak_in_use: u64,
    /// Highest `reserved` seen.
    pub peak_reserved: u64,
    /// Allocations of this kind made since the context was created.
    pub allocated: u64,
    /// Releases of this kind since the context was created.
    pub released: u64,
    /// Requests of this kind refused for the budget.
    pub over_budget_errors: u64,
    /// Requests of this kind the driver had no memory for.
    pub out_of_memory_errors: u64,
    /// Blocks of this kind taken from the device since the context was created, growths of
    /// a segment included (staging buffers not included).
    pub block_allocations: u64,
}

impl KindStats {
    /// `1 − largest_free / free` over this pool's shared blocks: 0 when free memory is one
    /// range, near 1 when it is scattered (out-of-memory while memory is free).
    pub fn fragmentation(&self) -> f64 {
        if self.free == 0 {
            0.0
        } else {
            // Pages given back inside the largest range can make it pass what is free.
            (1.0 - self.largest_free as f64 / self.free as f64).max(0.0)
        }
    }
}

/// Figures for one tag (see [`AllocDesc::tag`](crate::AllocDesc::tag)); untagged allocations
/// are counted under the tag `""`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagStats {
    /// The tag.
    pub tag: Label,
    /// Bytes asked for by live allocations with this tag.
    pub requested: u64,
    /// Bytes they hold, padding included.
    pub in_use: u64,
    /// Highest `requested` seen.
    pub peak_requested: u64,
    /// Highest `in_use` seen.
    pub peak_in_use: u64,
    /// Live allocations with this tag.
    pub live: usize,
    /// Allocations with this tag made since the context was created.
    pub allocated: u64,
    /// Releases of allocations with this tag.
    pub released: u64,
}

/// Pages given back inside segments and mapped again since the context was created
/// ([`ContextDesc::follow_live`](crate::ContextDesc::follow_live), pressure, the release
/// threshold): each is a driver call, and each giving back waits for the work that used the
/// pages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Ranges of free pages given back.
    pub unmaps: u64,
    /// Bytes that went back.
    pub unmapped_bytes: u64,
    /// Ranges of pages mapped again (for a request or a compaction copy).
    pub maps: u64,
    /// Bytes mapped again.
    pub mapped_bytes: u64,
    /// Ranges of free pages moved where a request needed memory, instead of going back
    /// while new memory was mapped ([`Storage::move_pages`](crate::backend::Storage::move_pages)).
    pub moves: u64,
    /// Bytes moved.
    pub moved_bytes: u64,
    /// Pages given back, mapped again and moved, in all: each is one mapping to the driver,
    /// and the page calls' cost grows with their number more than with their bytes.
    pub pages: u64,
}

/// Host time the manager spent, since the context was created, in the driver's calls that
/// take memory from the device or give it back, and waiting for streams before memory is
/// reused: the part of an allocation's cost that is not the manager's own bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverTime {
    /// New blocks and segment growths (their clears recorded, not waited for).
    pub grow: std::time::Duration,
    /// Pages given back, mapped again and moved.
    pub map: std::time::Duration,
    /// Blocks freed and segments shrunk, with the waits for their last work.
    pub give_back: std::time::Duration,
    /// Waits for other streams' work (vramkit's own queue's included) before memory they
    /// released, or a clear on vramkit's queue, is handed to a request.
    pub stream_wait: std::time::Duration,
    /// Of [`stream_wait`](Self::stream_wait), the waits before free pages went back to the
    /// device or moved, trims' included (the rest: before memory was placed, shrinks and
    /// compactions).
    pub page_wait: std::time::Duration,
}

/// What compaction has done since the context was created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Passes (one per window emptied for a request, or per block evacuation run).
    pub passes: u64,
    /// Allocations moved.
    pub allocations_moved: u64,
    /// Bytes copied.
    pub bytes_moved: u64,
    /// Host time spent in passes.
    pub duration: std::time::Duration,
}

/// A snapshot of a context's memory. See [`Context::stats`](crate::Context::stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// The budget, or `None` when unlimited.
    pub budget: Option<u64>,
    /// Bytes asked for by live allocations.
    pub requested: u64,
    /// Bytes held by live allocations, with padding.
    pub in_use: u64,
    /// Bytes held from the device: blocks plus staging buffers. The budget limits this.
    pub reserved: u64,
    /// Bytes of staging buffers (part of `reserved`).
    pub staging: u64,
    /// Bytes held in blocks but not in use: free ranges, cached for the next requests (part of
    /// `reserved`).
    pub cached_free: u64,
    /// Bytes of blocks with no allocation at all, kept up to the release threshold (part of
    /// `cached_free`).
    pub cached_empty: u64,
    /// Blocks taken from the device since the context was created, growths of a segment
    /// included (staging not included): the driver allocations the pools cost.
    pub block_allocations: u64,
    /// What compaction did.
    pub compaction: CompactionStats,
    /// Pages given back and mapped again.
    pub pages: PageStats,
    /// Time in the driver's calls that take or give back memory, and in stream waits.
    pub driver: DriverTime,
    /// Bytes released but still used by pending GPU work; they return to the pool after it.
    pub pending_release: u64,
    /// Highest `requested` seen.
    pub peak_requested: u64,
    /// Highest `in_use` seen.
    pub peak_in_use: u64,
    /// Highest `reserved` seen.
    pub peak_reserved: u64,
    /// Allocations made since the context was created.
    pub allocations: u64,
    /// Releases since the context was created.
    pub releases: u64,
    /// Allocations alive now.
    pub live: usize,
    /// Most allocations alive at once.
    pub peak_live: usize,
    /// Bytes held by every allocation made since the context was created, padding included.
    pub bytes_allocated: u64,
    /// Bytes held by every allocation released since the context was created.
    pub bytes_released: u64,
    /// Requests refused for the budget.
    pub over_budget_errors: u64,
    /// Requests the driver had no memory for.
    pub out_of_memory_errors: u64,
    /// Per kind, indexed by [`MemoryKind::index`].
    pub kinds: [KindStats; MemoryKind::COUNT],
    /// Per tag, largest `in_use` first.
    pub tags: Vec<TagStats>,
}

impl MemoryStats {
    /// Figures of one kind.
    pub fn kind(&self, kind: MemoryKind) -> &KindStats {
        &self.kinds[kind.index()]
    }

    /// Figures of one tag (`""`: untagged), if any allocation ever had it.
    pub fn tag(&self, tag: &str) -> Option<&TagStats> {
        self.tags.iter().find(|t| t.tag == tag)
    }

    /// [`KindStats::fragmentation`] of the device pool.
    pub fn fragmentation(&self) -> f64 {
        self.kind(MemoryKind::Device).fragmentation()
    }
}

impl std::fmt::Display for MemoryStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let budget = match self.budget {
            Some(b) => format!("{:.1} MiB", mib(b)),
            None => "unlimited".into(),
        };
        writeln!(
            f,
            "in use {:.1} MiB (peak {:.1}), reserved {:.1} MiB (peak {:.1}, staging {:.1}), budget {budget}",
            mib(self.in_use),
            mib(self.peak_in_use),
            mib(self.reserved),
            mib(self.peak_reserved),
            mib(self.staging),
        )?;
        writeln!(
            f,
            "{} live, {} allocated, {} released, {} over budget, {} out of memory, fragmentation {:.2}",
            self.live,
            self.allocations,
            self.releases,
            self.over_budget_errors,
            self.out_of_memory_errors,
            self.fragmentation()
        )?;
        write!(
            f,
            "cached free {:.1} MiB ({:.1} MiB in empty blocks), {} blocks taken, {} compaction passes moved {:.1} MiB in {:.2} ms",
            mib(self.cached_free),
            mib(self.cached_empty),
            self.block_allocations,
            self.compaction.passes,
            mib(self.compaction.bytes_moved),
            self.compaction.duration.as_secs_f64() * 1e3,
        )
    }
}

/// Running counters, updated on every operation (a few additions each; tags by index).
#[derive(Default)]
pub(crate) struct Counters {
    pub requested: u64,
    pub in_use: u64,
    pub reserved: u64,
    pub peak_requested: u64,
    pub peak_in_use: u64,
    pub peak_reserved: u64,
    pub allocations: u64,
    pub releases: u64,
    pub peak_live: u64,
    pub bytes_allocated: u64,
    pub bytes_released: u64,
    pub over_budget: u64,
    pub out_of_memory: u64,
    /// Staging bytes and buffers per kind.
    pub staging: [(u64, usize); MemoryKind::COUNT],
    pub block_allocations: u64,
    pub compaction: CompactionStats,
    pub pages: PageStats,
    pub driver: DriverTime,
    pub kinds: [KindStats; MemoryKind::COUNT],
    /// Every tag seen, in first-use order; allocations refer to them by index.
    pub tags: Vec<TagStats>,
    /// The most ever in use per kind: what the pools' slack is measured from. Unlike the
    /// peaks reported, [`reset_peaks`](Self::reset_peaks) leaves it, so resetting what a
    /// program reads never changes what the allocator keeps or maps.
    most_in_use: [u64; MemoryKind::COUNT],
}

impl Counters {
    /// The index of `tag`, registering it on first use; untagged allocations are counted
    /// under `""`, always index 0. Tags are few, so a scan beats hashing; a `&'static` tag is
    /// usually the very string seen before, so pointers are compared first.
    #[inline]
    pub fn tag_index(&mut self, tag: Option<&Label>) -> u32 {
        if self.tags.is_empty() {
            self.tags.push(TagStats::default());
        }
        let Some(label) = tag else { return 0 };
        let name: &str = label;
        if let Some(i) = self
            .tags
            .iter()
            .position(|t| std::ptr::eq(t.tag.as_ptr(), name.as_ptr()) && t.tag.len() == name.len())
            .or_else(|| self.tags.iter().position(|t| t.tag == name))
        {
            return i as u32;
        }
        self.tags.push(TagStats {
            tag: label.clone(),
            ..Default::default()
        });
        (self.tags.len() - 1) as u32
    }

    /// An allocation of `requested` bytes holding `size` was made: totals, its kind and its tag
    /// grow alike.
    #[inline]
    pub fn on_alloc(&mut self, kind: MemoryKind, tag: u32, requested: u64, size: u64) {
        // The same four running figures and peaks, kept for all, per kind and per tag.
        macro_rules! grow {
            ($t:expr) => {
                $t.requested += requested;
                $t.in_use += size;
                $t.peak_requested = $t.peak_requested.max($t.requested);
                $t.peak_in_use = $t.peak_in_use.max($t.in_use);
            };
        }
        grow!(self);
        self.allocations += 1;
        self.peak_live = self.peak_live.max(self.allocations - self.releases);
        self.bytes_allocated += size;
        let k = &mut self.kinds[kind.index()];
        grow!(k);
        k.allocations += 1;
        k.allocated += 1;
        let most = &mut self.most_in_use[kind.index()];
        *most = (*most).max(k.in_use);
        if let Some(t) = self.tags.get_mut(tag as usize) {
            grow!(t);
            t.live += 1;
            t.allocated += 1;
        }
    }

    /// An allocation made by [`on_alloc`](Self::on_alloc) was released.
    #[inline]
    pub fn on_release(&mut self, kind: MemoryKind, tag: u32, requested: u64, size: u64) {
        macro_rules! shrink {
            ($t:expr) => {
                $t.requested -= requested;
                $t.in_use -= size;
            };
        }
        shrink!(self);
        self.releases += 1;
        self.bytes_released += size;
        let k = &mut self.kinds[kind.index()];
        shrink!(k);
        k.allocations -= 1;
        k.released += 1;
        if let Some(t) = self.tags.get_mut(tag as usize) {
            shrink!(t);
            t.live -= 1;
            t.released += 1;
        }
    }

    /// The most `kind` ever had in use (never reset): what the pools' slack is measured from.
    pub fn most_in_use(&self, kind: MemoryKind) -> u64 {
        self.most_in_use[kind.index()]
    }

    /// Every peak reported (of all kinds, each kind and each tag) set to the figure it follows
    /// now; what the allocator measures its slack from stays.
    pub fn reset_peaks(&mut self) {
        self.peak_requested = self.requested;
        self.peak_in_use = self.in_use;
        self.peak_reserved = self.reserved;
        self.peak_live = self.allocations - self.releases;
        for k in &mut self.kinds {
            k.peak_requested = k.requested;
            k.peak_in_use = k.in_use;
            k.peak_reserved = k.reserved;
        }
        for t in &mut self.tags {
            t.peak_requested = t.requested;
            t.peak_in_use = t.in_use;
        }
    }

    /// A block (or staging buffer) of `kind` was made (`bytes > 0`) or freed.
    pub fn on_reserve(&mut self, kind: MemoryKind, bytes: u64, made: bool) {
        let k = &mut self.kinds[kind.index()];
        if made {
            self.reserved += bytes;
            self.peak_reserved = self.peak_reserved.max(self.reserved);
            k.reserved += bytes;
            k.blocks += 1;
            k.peak_reserved = k.peak_reserved.max(k.reserved);
        } else {
            self.reserved -= bytes;
            k.reserved -= bytes;
            k.blocks -= 1;
        }
    }

    /// A segment grew (`delta > 0`) or shrank in place.
    pub fn on_resize(&mut self, kind: MemoryKind, delta: i64) {
        let k = &mut self.kinds[kind.index()];
        self.reserved = self.reserved.wrapping_add_signed(delta);
        k.reserved = k.reserved.wrapping_add_signed(delta);
        self.peak_reserved = self.peak_reserved.max(self.reserved);
        k.peak_reserved = k.peak_reserved.max(k.reserved);
    }

    /// A pool block (not staging) was taken from the device, or a segment grew.
    pub fn on_block_alloc(&mut self, kind: MemoryKind) {
        self.block_allocations += 1;
        self.kinds[kind.index()].block_allocations += 1;
    }

    pub fn on_error(&mut self, kind: MemoryKind, over_budget: bool) {
        let k = &mut self.kinds[kind.index()];
        if over_budget {
            self.over_budget += 1;
            k.over_budget_errors += 1;
        } else {
            self.out_of_memory += 1;
            k.out_of_memory_errors += 1;
        }
    }
}
