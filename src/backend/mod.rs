//! The seam between the memory manager and a GPU API.
//!
//! A [`Backend`] makes raw blocks, copies bytes and launches kernels; it does no validation and
//! no accounting. Everything above it (sub-allocation, budgets, handles, staging, statistics) is
//! written once in [`crate::memory`] and works for every backend. The seam is narrow on purpose:
//! blocks (fixed, or growable segments), host access, queue-ordered copies, clears and
//! dispatches, and submission indices to wait on.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod host;
pub mod wgpu;

use crate::error::{Error, Result};

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
}

impl MemoryKind {
    /// All kinds, in index order.
    pub const ALL: [MemoryKind; 4] = [
        MemoryKind::Device,
        MemoryKind::Upload,
        MemoryKind::Readback,
        MemoryKind::Unified,
    ];

    /// A dense index, `0..4`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether the host reads or writes this kind directly.
    pub const fn host_visible(self) -> bool {
        !matches!(self, MemoryKind::Device)
    }
}

/// Identifies one submission of recorded GPU work. Indices grow by one per submission; work
/// recorded but not yet submitted belongs to the next index.
pub type SubmissionIndex = u64;

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

/// A compute kernel in source form. Backends compile it once; the context caches the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// A unique name, used for caching and in error messages.
    pub label: &'static str,
    /// WGSL source (see [`crate::shaders`]).
    pub wgsl: &'static str,
    /// Entry point: the WGSL function, and the `extern "C"` function of the CUDA twin.
    pub entry: &'static str,
    /// CUDA C source of the same kernel (see `shaders/cuda/`), for the CUDA backend; empty
    /// where there is none. Its function takes the storage bindings as pointers, in binding
    /// order, then the params struct by value; its block size is the WGSL workgroup size.
    pub cuda: &'static str,
    /// The shader guards every buffer access with sizes its dispatch function has checked
    /// against the bound buffers, so the backend may compile it without runtime bounds checks
    /// (which cost a compare and a clamp per access).
    pub guarded: bool,
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

/// Values for a kernel's `override` constants, by name. The context builds one pipeline per
/// kernel and set of values, and caches it.
pub type Constants<'a> = &'a [(&'static str, f64)];

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

/// A GPU API under the memory manager.
///
/// Recording methods ([`copy`](Backend::copy), [`clear`](Backend::clear),
/// [`dispatch`](Backend::dispatch)) add work to the open submission and return its index; the
/// work runs after [`submit`](Backend::submit). Host access ([`write_host`](Backend::write_host),
/// [`read_host`](Backend::read_host)) is immediate: the caller waits first for submissions that
/// use the block. Implementations are internally synchronised: every method takes `&self`.
///
/// All recorded work runs in recording order, as on one CUDA stream or one wgpu queue: the
/// memory manager relies on it to reuse released device memory at once and to move allocations
/// that pending work uses (the copy runs after that work). Blocks are either fixed or, where
/// [`resizable`](Backend::resizable), segments that grow and shrink at their end.
pub trait Backend: Send + Sync + 'static {
    /// A raw block of memory.
    type Block: Send + Sync + 'static;
    /// A compiled kernel.
    type Kernel: Send + Sync + 'static;

    /// The device this backend runs on.
    fn device_info(&self) -> DeviceInfo;
    /// Allocation and binding limits.
    fn limits(&self) -> &BackendLimits;
    /// Total and free device memory, where the API tells.
    fn memory_info(&self) -> Option<MemoryInfo>;
    /// `Err(`[`crate::Error::DeviceLost`]`)` once the device is gone, else `Ok`.
    fn check_device(&self) -> Result<()>;
    /// `Ok` if blocks of `kind` can be made, else [`crate::Error::Unsupported`] with the reason.
    fn supports(&self, kind: MemoryKind) -> Result<()>;

    /// Makes a block of `size` bytes. New blocks read as zeros.
    fn alloc_block(&self, size: u64, kind: MemoryKind) -> Result<Self::Block>;
    /// Frees a block. The caller guarantees no pending submission uses it.
    fn free_block(&self, block: Self::Block);

    /// Whether blocks of `kind` grow and shrink in place, keeping their contents and device
    /// address ([`grow_block`](Backend::grow_block), [`shrink_block`](Backend::shrink_block)).
    /// The memory manager then keeps one growing block (a segment) per pool, as
    /// PyTorch's expandable segments: free space anywhere in it can be gathered by compaction
    /// and joined with new memory at its end.
    fn resizable(&self, _kind: MemoryKind) -> bool {
        false
    }

    /// Grows a block made by [`alloc_block`](Backend::alloc_block) to `new_size` bytes in
    /// place; the new bytes read as zeros. Only where [`resizable`](Backend::resizable).
    fn grow_block(&self, _block: &Self::Block, _new_size: u64) -> Result<()> {
        Err(Error::Unsupported {
            what: "growing a block".into(),
            reason: "this backend's blocks have a fixed size".into(),
        })
    }

    /// Gives back the end of a block beyond `new_size` bytes, as far as the API's granularity
    /// allows, and returns the block's size afterwards (at least `new_size`). The caller
    /// guarantees nothing uses that end. Only where [`resizable`](Backend::resizable).
    fn shrink_block(&self, _block: &Self::Block, _new_size: u64) -> Result<u64> {
        Err(Error::Unsupported {
            what: "shrinking a block".into(),
            reason: "this backend's blocks have a fixed size".into(),
        })
    }

    /// Writes `data` at `offset` of a host-visible block.
    fn write_host(&self, block: &Self::Block, offset: u64, data: &[u8]) -> Result<()>;
    /// Reads `out.len()` bytes at `offset` of a host-visible block.
    fn read_host(&self, block: &Self::Block, offset: u64, out: &mut [u8]) -> Result<()>;

    /// Records a copy of `size` bytes between blocks, or between two ranges of one block that
    /// do not overlap.
    fn copy(
        &self,
        src: &Self::Block,
        src_offset: u64,
        dst: &Self::Block,
        dst_offset: u64,
        size: u64,
    ) -> Result<SubmissionIndex>;
    /// Records a fill of `size` bytes at `offset` with zeros.
    fn clear(&self, block: &Self::Block, offset: u64, size: u64) -> Result<SubmissionIndex>;

    /// Compiles a kernel with values for its `override` constants.
    fn compile(&self, source: &KernelSource, constants: Constants<'_>) -> Result<Self::Kernel>;
    /// Records a kernel launch: `bindings` are storage buffers `0..n` of group 0, `params` (if
    /// not empty) a uniform buffer at binding `n`.
    fn dispatch(
        &self,
        kernel: &Self::Kernel,
        bindings: &[BlockRange<'_, Self::Block>],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<SubmissionIndex>;

    /// Applies a [`MemoryAdvice`] to a range of a [`MemoryKind::Unified`] block. Backends whose
    /// unified memory does not migrate accept and ignore it (the default).
    fn advise(
        &self,
        _block: &Self::Block,
        _offset: u64,
        _size: u64,
        _advice: MemoryAdvice,
    ) -> Result<()> {
        Ok(())
    }

    /// Whether [`vendor_matmul`](Backend::vendor_matmul) is available (cuBLAS on CUDA).
    fn has_vendor_matmul(&self) -> bool {
        false
    }

    /// Records `C = A·B` on row-major f32 matrices (`dims` = `[m, n, k]`) with the vendor's
    /// BLAS. The bindings are `A`, `B`, `C`, checked as for a kernel.
    fn vendor_matmul(
        &self,
        _bindings: &[BlockRange<'_, Self::Block>],
        _dims: [u32; 3],
    ) -> Result<SubmissionIndex> {
        Err(Error::Unsupported {
            what: "vendor matmul".into(),
            reason: "this backend has no vendor BLAS; use MatmulKernel::Auto or Tiled".into(),
        })
    }

    /// Submits recorded work, returning its index (the last index if nothing was recorded).
    fn submit(&self) -> Result<SubmissionIndex>;
    /// Whether the submission `index` has finished (polls without blocking).
    fn is_done(&self, index: SubmissionIndex) -> Result<bool>;
    /// Blocks until submission `index` has finished, submitting it first if it is still open.
    fn wait(&self, index: SubmissionIndex) -> Result<()>;
}
