//! Where memory lives, how submissions are counted, and what allocations are called.

/// Where a block lives and how it can be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// Device-local memory: kernels read and write it; the host reaches it only through staging.
    Device,
    /// Host-visible memory the host writes and the device copies from (staging for uploads).
    Upload,
    /// Host-visible memory the device copies into and the host reads (staging for readbacks).
    Readback,
    /// Memory both the host and kernels use directly: CUDA managed memory, or host-visible
    /// device memory on wgpu adapters that offer it.
    Unified,
    /// Textures: images kernels sample and store to, one driver allocation each (wgpu
    /// textures; linear device memory with 256-byte-aligned rows on CUDA and the host). Held
    /// by the same manager and budget as buffers, never sub-allocated from blocks.
    Texture,
}

impl MemoryKind {
    /// How many kinds there are.
    pub const COUNT: usize = 5;

    /// All kinds, in index order.
    pub const ALL: [MemoryKind; MemoryKind::COUNT] = [
        MemoryKind::Device,
        MemoryKind::Upload,
        MemoryKind::Readback,
        MemoryKind::Unified,
        MemoryKind::Texture,
    ];

    /// A dense index, `0..COUNT`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether the host reads or writes this kind directly.
    pub const fn host_visible(self) -> bool {
        !matches!(self, MemoryKind::Device | MemoryKind::Texture)
    }
}

/// Identifies one submission of recorded GPU work. Indices grow by one per submission; work
/// recorded but not yet submitted belongs to the next index.
pub type QueueIndex = u64;

/// A hint about how a [`MemoryKind::Unified`] allocation will be used, for drivers that migrate
/// unified memory between host and device (CUDA's `cuMemAdvise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryAdvice {
    /// Mostly read: the driver may keep read-only copies on both sides.
    ReadMostly,
    /// Undo [`ReadMostly`](Self::ReadMostly).
    UnsetReadMostly,
    /// Keep the pages on the device; the host reaches them remotely or by migration.
    PreferDevice,
    /// Keep the pages in host memory; the device reaches them remotely or by migration.
    PreferHost,
    /// Undo a preferred location.
    UnsetPreferredLocation,
}

/// An allocation's label: borrowed when static, owned otherwise.
pub type Label = std::borrow::Cow<'static, str>;
