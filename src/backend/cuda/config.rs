//! How a CUDA backend is set up.

#[cfg(doc)]
use super::CudaBackend;
use crate::types::BackendLimits;

/// How a [`CudaBackend`] is set up.
#[derive(Clone, Copy, Debug)]
pub struct CudaConfig {
    /// Device memory in growable segments (default; where the device supports virtual memory
    /// management): the memory manager keeps one segment per pool that grows and shrinks at
    /// its end without copies, as PyTorch's `expandable_segments`. `false`: fixed blocks from
    /// `cuMemAlloc`.
    pub segments: bool,
    /// Matmul on cuBLAS where it is installed (default), loaded on first use. `false` never
    /// loads it: matmul runs vramkit's own kernels
    /// ([`DebugSettings::no_vendor_blas`](crate::DebugSettings::no_vendor_blas) sets it
    /// through `Context::cuda`).
    pub vendor_blas: bool,
    /// The size of a segment's pages, each one physical allocation (`cuMemCreate`) that the
    /// memory manager maps, gives back or moves whole; rounded up to a multiple of the
    /// device's granularity (2 MiB on current GPUs), at most [`Self::MAX_PAGE_SIZE`]. `0`
    /// (default): the granularity.
    ///
    /// The driver's page calls cost about the same for a page of 2 MiB as for one of 64 MiB
    /// (`cuMemRelease` excepted: 10 and 27 µs on an H100), so larger pages make physical
    /// memory following the live set cheaper
    /// ([`ContextDesc::follow_live`](crate::ContextDesc::follow_live)), while a page that
    /// holds any live byte cannot go back: coarser pages hold more past the live set. A
    /// segment's last page is mapped whole: the device holds up to one page per segment more
    /// than the memory manager counts against its budget.
    ///
    /// With [`page_growth`](Self::page_growth) this is the smallest page.
    pub page_size: u64,
    /// Whether pages grow with their offset in a segment (default): pages of
    /// [`page_size`](Self::page_size) below 1024 of them, then twice the size for each
    /// doubling of the offset ([`PageGrid::growing`](crate::backend::PageGrid::growing); with
    /// 2 MiB pages, 4 MiB ones past 2 GiB, 8 MiB past 4 GiB). A page is then at most 1/512 of
    /// the memory below it: a small live set is followed in small pages, and a large one in
    /// fewer driver calls. `false`: [`page_size`](Self::page_size) everywhere.
    pub page_growth: bool,
    /// Whether pages a segment gives back, and the old places of pages moved, are unmapped by
    /// a thread of the backend: `cuMemUnmap` and `cuMemRelease` (about 30 µs a page)
    /// leave the allocation's path (a mapping at the same addresses waits for them), and the
    /// device gets the memory back a moment later (at once where a trim, the memory manager
    /// under pressure, a read of the device's free memory or a refused `cuMemCreate` asks).
    /// The thread also lets pages that a caller's stream released, while its work may still
    /// use them, move to that stream's next request without the host waiting for the stream
    /// ([`Storage::move_pages_after`](crate::backend::Storage::move_pages_after)): the thread
    /// unmaps their old place once an event recorded on the stream passed. On by default;
    /// `false`: unmapped inside the call that gives them back, and such moves wait for the
    /// stream.
    pub background_unmap: bool,
}

impl CudaConfig {
    /// The largest [`page_size`](Self::page_size): 1 GiB.
    pub const MAX_PAGE_SIZE: u64 = 1 << 30;
}

impl Default for CudaConfig {
    fn default() -> Self {
        Self {
            segments: true,
            vendor_blas: true,
            page_size: 0,
            page_growth: true,
            background_unmap: true,
        }
    }
}

/// What a CUDA device of `total` bytes with `shared` bytes of shared memory per block can
/// allocate and bind.
pub(super) fn limits(total: u64, shared: i32) -> BackendLimits {
    BackendLimits {
        max_block_size: total,
        // Kernels index with 32-bit integers.
        max_binding_size: u64::from(u32::MAX) / 4 * 4,
        offset_alignment: 256,
        copy_alignment: 4,
        // CUDA's grid limits; kernel parameters take at most 4 KiB (with the
        // bindings' pointers, which take 16 bytes each at most).
        max_workgroups: [i32::MAX as u32, 65_535, 65_535],
        max_params_size: 2048,
        // Textures are pitched linear memory here; the side of CUDA's largest 2D
        // texture over linear memory is at least this on every current GPU.
        max_texture_side: 65_536,
        texture_kernels: false,
        max_workgroup_storage: u32::try_from(shared).unwrap_or(0),
        // CUDA's block limits on every architecture since Fermi.
        max_workgroup_size: [1024, 1024, 64],
        max_invocations: 1024,
    }
}
