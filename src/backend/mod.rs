//! The seam between the memory manager and a GPU API, in two traits.
//!
//! - [`Storage`]: blocks (fixed, or segments that grow and shrink at their end), host access
//!   to host-visible blocks, queue-ordered copies and clears, textures (made one driver
//!   allocation each, with the driver's size where the API tells, and copies of row-padded
//!   rectangles between blocks and textures), submissions to wait on, limits and memory info,
//!   and optionally device-to-device copies to another backend of its type
//!   ([`Storage::copy_to_peer`]: CUDA peers, contexts of one device; the device set's copies,
//!   [`crate::devices`]). The memory manager ([`crate::memory`]) is written once over it, so it
//!   runs and is tested on plain host memory ([`host::HostBackend`]) as on a GPU.
//! - [`Compute`]: compiling kernels and launching them over block ranges, and a vendor BLAS.
//!
//! [`Backend`] is both, what a [`Context`](crate::Context) runs on. Backends do raw work and no
//! validation or accounting; the memory manager validates once (its `resolve` turns a handle,
//! a range and an access into a block range) and accounts once, as wgpu-core does over
//! wgpu-hal.
//!
//! # Why `unsafe fn`, not a sealed trait
//! Every method whose precondition the manager checks (a range inside its block, no pending
//! work on a block being freed, params that keep an unchecked kernel inside its bindings) is an
//! `unsafe fn` with a numbered `# Safety` list, as in wgpu-hal's `Device`. Safe methods
//! (making a block, compiling, submitting, waiting) cannot break memory whatever their
//! arguments. So [`Context::backend`](crate::Context::backend) can stay public for interop
//! (an app's own wgpu device, a CUDA stream) and safe code still cannot reach an unchecked
//! contract, while the traits stay open: an app or a test can implement a backend of its own,
//! which a sealed trait would forbid. The traits themselves are `unsafe trait`s because the
//! manager's soundness rests on what an implementation promises (blocks as large as asked,
//! work run in recording order, waits that wait); see each trait's `# Safety`.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod host;
mod host_bytes;
mod host_pages;
mod host_streams;
pub mod wgpu;

mod compute;
#[cfg(feature = "cuda")]
mod deferred;
mod linear_texture;
mod storage;
mod stream;

pub use compute::{Compute, Constants, KernelBinding, KernelSource};
#[cfg(feature = "cuda")]
pub(crate) use deferred::DeferredError;
pub use linear_texture::LinearTexture;
pub use storage::Storage;
pub use stream::{ForeignStream, StreamMark, StreamRef};

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

/// What a backend can allocate and bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendLimits {
    /// Largest single block (buffer) the API can create.
    pub max_block_size: u64,
    /// Largest range one kernel binding may cover.
    pub max_binding_size: u64,
    /// Alignment of binding offsets; sub-allocations are aligned to it.
    pub offset_alignment: u64,
    /// Copies must start at, and have sizes that are, multiples of this.
    pub copy_alignment: u64,
    /// Most workgroups one launch may have in x, y and z.
    pub max_workgroups: [u32; 3],
    /// Largest params struct (uniform buffer) one launch may take, in bytes.
    pub max_params_size: u64,
    /// Most texels per side of a 2D texture.
    pub max_texture_side: u32,
    /// Whether kernels can bind textures ([`Compute::dispatch_textures`]); where they cannot,
    /// textures are linear memory that only transfers reach.
    pub texture_kernels: bool,
    /// Most bytes of workgroup (shared) memory one kernel may declare; kernels that need more
    /// than a device gives are not launched there (the blur falls back to a pass without it).
    pub max_workgroup_storage: u32,
    /// Most invocations of one workgroup in x, y and z (a kernel's `@workgroup_size`).
    pub max_workgroup_size: [u32; 3],
    /// Most invocations of one workgroup in all (x × y × z).
    pub max_invocations: u32,
}

/// Total and free memory of the device, where the API tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Bytes of memory the device has.
    pub total: u64,
    /// Bytes free now (for every process).
    pub free: u64,
}

/// A description of the device a backend runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The backend API, e.g. `"Vulkan"`, `"host"`.
    pub api: String,
    /// The device name, e.g. `"llvmpipe (LLVM 15.0.6, 256 bits)"`.
    pub name: String,
    /// Driver name and version, where known.
    pub driver: String,
    /// `"cpu"`, `"discrete"`, `"integrated"`, `"virtual"` or `"other"`.
    pub device_type: String,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {} ({}, {})",
            self.name, self.api, self.device_type, self.driver
        )
    }
}

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

/// One storage binding of a dispatch: a range of a block.
#[derive(Debug)]
pub struct BlockRange<'a, Blk> {
    /// The block.
    pub block: &'a Blk,
    /// Start of the range, a multiple of [`BackendLimits::offset_alignment`].
    pub offset: u64,
    /// Length of the range, at most [`BackendLimits::max_binding_size`].
    pub size: u64,
}

/// A GPU API under a [`Context`](crate::Context): [`Storage`] and [`Compute`]. Implemented for
/// every type that implements both.
pub trait Backend: Storage + Compute {}

impl<T: Storage + Compute> Backend for T {}
