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

mod buffer_copy;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod host;
mod host_bytes;
mod host_compute;
mod host_config;
mod host_null;
mod host_pages;
mod host_pieces;
mod host_streams;
mod page_grid;
#[cfg(feature = "wgpu")]
pub mod wgpu;

/// The backend of a [`Context`](crate::Context) (and of [`Owned`](crate::Owned),
/// [`DeviceSet`](crate::devices::DeviceSet)) that names none: wgpu with feature `wgpu` (a
/// default feature), the host otherwise.
#[cfg(feature = "wgpu")]
pub type DefaultBackend = wgpu::WgpuBackend;
/// The backend of a [`Context`](crate::Context) (and of [`Owned`](crate::Owned),
/// [`DeviceSet`](crate::devices::DeviceSet)) that names none: wgpu with feature `wgpu` (a
/// default feature), the host otherwise.
#[cfg(not(feature = "wgpu"))]
pub type DefaultBackend = host::HostBackend;

mod compute;
#[cfg(feature = "cuda")]
mod deferred;
mod linear_texture;
mod storage;
mod stream;

pub use crate::types::{
    BackendLimits, CooperativeMatrix, CooperativeScalar, DeviceInfo, MemoryInfo, QueueIndex,
};
pub use buffer_copy::BUFFER_COPY;
pub use compute::{Compute, Constants, KernelBinding, KernelSource, CUDA_PRELUDE};
#[cfg(feature = "cuda")]
pub(crate) use deferred::DeferredError;
pub use linear_texture::LinearTexture;
pub use page_grid::PageGrid;
pub use storage::Storage;
pub use stream::{ForeignStream, StreamMark, StreamRef};

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
