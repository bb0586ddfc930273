//! Counters of the memory manager.

use crate::backend::MemoryKind;

/// Figures for one [`MemoryKind`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Bytes asked for by live allocations.
    pub requested: u64,
    /// Bytes held by live allocations, alignment padding included.
    pub in_use: u64,
    /// Bytes in blocks of this kind (staging buffers included for `Upload`/`Readback`).
    pub reserved: u64,
    /// Number of blocks (staging buffers included).
    pub blocks: usize,
    /// Number of live allocations.
    pub allocations: usize,
    /// Free bytes inside shared blocks.
    pub free: u64,
    /// The largest free range inside one shared block.
    pub largest_free: u64,
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
    /// Bytes released but still used by pending GPU work; they return to the pool after it.
    pub pending_release: u64,
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
    /// Requests refused for the budget.
    pub over_budget_errors: u64,
    /// Requests the driver had no memory for.
    pub out_of_memory_errors: u64,
    /// Per kind, indexed by [`MemoryKind::index`].
    pub kinds: [KindStats; 4],
}

impl MemoryStats {
    /// Figures of one kind.
    pub fn kind(&self, kind: MemoryKind) -> &KindStats {
        &self.kinds[kind.index()]
    }

    /// `1 − largest_free / free` over the device pool: 0 when free memory is one range, near 1
    /// when it is scattered.
    pub fn fragmentation(&self) -> f64 {
        let k = self.kind(MemoryKind::Device);
        if k.free == 0 {
            0.0
        } else {
            1.0 - k.largest_free as f64 / k.free as f64
        }
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
        write!(
            f,
            "{} live, {} allocated, {} released, {} over budget, {} out of memory, fragmentation {:.2}",
            self.live,
            self.allocations,
            self.releases,
            self.over_budget_errors,
            self.out_of_memory_errors,
            self.fragmentation()
        )
    }
}
