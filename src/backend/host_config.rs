//! Settings of the host backend's emulated device.

#[cfg(doc)]
use super::Storage;
use crate::types::BackendLimits;

/// Settings of the emulated device.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Limits to report (defaults mirror a typical GPU: 256-byte offsets, 128 MiB bindings).
    pub limits: BackendLimits,
    /// Emulated device capacity in bytes; `None` is bounded only by the host's memory.
    pub capacity: Option<u64>,
    /// Whether device blocks grow and shrink in place (default), so the memory manager keeps
    /// growing segments as it does on CUDA (see [`Storage::resizable`]); `false` gives fixed
    /// blocks, as on wgpu.
    pub resizable: bool,
    /// Whether blocks hold their bytes (default). `false` makes a null device: blocks hold
    /// nothing, reads give zeros, writes, copies and clears are dropped. It measures the memory
    /// manager's own work, with no memory traffic (`benches/replay.rs`). With
    /// [`reserve`](Self::reserve), its device blocks still have addresses
    /// ([`Storage::device_address`]), in address space no memory is behind and that no other
    /// null block of the process shares, and grow only within their reservation.
    pub keep_bytes: bool,
    /// Pages that resizable device blocks give back inside ([`Storage::unmap_pages`];
    /// default 2 MiB, CUDA's granularity): the smallest, with
    /// [`page_growth`](Self::page_growth).
    pub page_size: u64,
    /// Whether pages grow with their offset in a block, as on CUDA
    /// ([`PageGrid::growing`](super::PageGrid::growing); default), or keep
    /// [`page_size`](Self::page_size) everywhere.
    pub page_growth: bool,
    /// Address space each resizable device block takes up front (as CUDA's segments reserve
    /// theirs), so that it grows and shrinks without moving and has a stable address
    /// ([`Storage::device_address`]); the host's allocator maps its pages only when touched.
    /// A block cannot grow past it. `None` (default): blocks are reallocated as they grow,
    /// and may move.
    pub reserve: Option<u64>,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            limits: BackendLimits {
                max_block_size: 1 << 40,
                max_binding_size: 128 << 20,
                offset_alignment: 256,
                copy_alignment: 4,
                max_workgroups: [65_535; 3],
                max_params_size: 64 << 10,
                max_texture_side: 65_536,
                texture_kernels: false,
                // Kernels do not run here; what CUDA gives statically.
                max_workgroup_storage: 48 << 10,
                // WebGPU's defaults, which every backend gives.
                max_workgroup_size: [256, 256, 64],
                max_invocations: 256,
            },
            capacity: None,
            resizable: true,
            keep_bytes: true,
            page_size: 2 << 20,
            page_growth: true,
            reserve: None,
        }
    }
}
