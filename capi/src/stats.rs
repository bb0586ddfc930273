//! The figures `vramkit_get_stats` fills: one device's allocator, as the header's
//! `vramkit_stats` lays them out.

/// Figures of one device's allocator (the header's `vramkit_stats`), in bytes unless named
/// otherwise.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VramkitStats {
    /// Bytes asked for by live allocations.
    pub requested: u64,
    /// Bytes of live allocations (rounded to the unit).
    pub in_use: u64,
    /// Bytes held from the device.
    pub reserved: u64,
    /// Highest `requested`.
    pub peak_requested: u64,
    /// Highest `in_use`.
    pub peak_in_use: u64,
    /// Highest `reserved`.
    pub peak_reserved: u64,
    /// Live allocations.
    pub live: u64,
    /// Allocations made so far.
    pub allocations: u64,
    /// Allocations freed so far.
    pub releases: u64,
    /// Requests refused (budget or device).
    pub refusals: u64,
    /// The budget; `u64::MAX`: none.
    pub budget: u64,
    /// Free bytes inside reserved memory.
    pub free_in_holes: u64,
    /// The largest free range.
    pub largest_free: u64,
    /// Freed bytes waiting for other streams' work.
    pub pending_release: u64,
    /// `vramkit_malloc` calls on this device.
    pub malloc_calls: u64,
    /// Nanoseconds spent inside them.
    pub malloc_ns: u64,
    /// `vramkit_free` calls on this device.
    pub free_calls: u64,
    /// Nanoseconds spent inside them.
    pub free_ns: u64,
    /// Free device memory (`cuMemGetInfo`); 0: unknown.
    pub device_free: u64,
    /// Total device memory; 0: unknown.
    pub device_total: u64,
    /// Ranges of free pages given back to the device.
    pub page_unmaps: u64,
    /// Their bytes.
    pub unmapped_bytes: u64,
    /// Ranges of pages mapped again.
    pub page_maps: u64,
    /// Their bytes.
    pub mapped_bytes: u64,
    /// Ranges of free pages moved where a request needed memory (instead of going back while
    /// new memory is mapped).
    pub page_moves: u64,
    /// Their bytes.
    pub moved_bytes: u64,
    /// Nanoseconds in the driver's calls that take new memory (blocks, segment growths).
    pub grow_ns: u64,
    /// Nanoseconds in the driver's calls that give pages back, map them again and move them.
    pub page_ns: u64,
    /// Nanoseconds freeing blocks and shrinking segments, with the waits for their last work.
    pub give_back_ns: u64,
    /// Nanoseconds waiting for streams' work before memory they released is reused.
    pub stream_wait_ns: u64,
    /// Pages given back, mapped again and moved, in all (the driver's page calls are paid
    /// per page).
    pub pages: u64,
    /// Of `stream_wait_ns`, the nanoseconds waiting before free pages went back or moved.
    pub page_wait_ns: u64,
    /// Most allocations alive at once (since the last `vramkit_reset_peaks`, as every peak).
    pub peak_live: u64,
    /// Bytes of every allocation made so far (rounded to the unit, as `in_use`).
    pub bytes_allocated: u64,
    /// Bytes of every allocation freed so far.
    pub bytes_freed: u64,
    /// Blocks of device memory held now (segments, which grow and shrink in place).
    pub segments: u64,
}
