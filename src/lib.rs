//! # vramkit
//!
//! GPU memory as a budgeted, observable, portable resource, with real compute on top.
//!
//! A [`Context`] owns one [`Backend`](backend::Backend) (wgpu, CUDA, or plain host memory)
//! and one memory manager written once over it: large blocks sub-allocated behind generational
//! handles, a hard budget with errors that say what would fit, uploads and readbacks through a
//! reusable staging ring, deferred release after the GPU is done, and counters.
//!
//! ```no_run
//! use vramkit::bytemuck; // the bytemuck vramkit is built on: no dependency of your own needed
//! use vramkit::{AllocDesc, Context, ContextDesc};
//! let ctx = Context::new(ContextDesc { budget: Some(256 << 20), ..Default::default() })?;
//! let x = ctx.alloc(AllocDesc::new("x", 4 * 1024))?;
//! ctx.upload_slice(x, &[1.0f32; 1024])?;
//! let back: Vec<f32> = ctx.download_vec(x)?;
//! assert_eq!(back[0], 1.0);
//! // Bytes and typed data are the same memory.
//! assert_eq!(bytemuck::cast_slice::<u8, f32>(&ctx.download(x)?)[1023], 1.0);
//! ctx.release(x)?;
//! println!("{}", ctx.stats());
//! # Ok::<(), vramkit::Error>(())
//! ```
//!
//! The rest of the context is grouped in views: [`Context::transfers`] (offsets, closures,
//! staging buffers), [`Context::textures`], [`Context::memory`] (budget, trim, compact, what
//! fits), [`Context::observe`] (summary, leaks, timeline, audit) and [`Context::interop`] (wgpu
//! bindings, CUDA device pointers and streams, the vendor BLAS). `ARCHITECTURE.md` in the repository describes
//! the layers, the backend seam and where each concern lives.

#![deny(clippy::unwrap_used)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod backend;
mod context;
mod device_ptr;
pub mod devices;
mod dispatch;
pub mod interop;
mod kernel_builds;
pub mod memory;
mod memory_view;
pub mod observe;
mod owned;
mod queue;
mod shutdown;
mod signature;
mod staging_buffer;
pub mod texture;
pub mod transfers;
mod typed;
mod types;
mod vendor;

/// The bytemuck version vramkit's typed transfers ([`Context::upload_slice`],
/// [`Context::download_vec`]) take, for `Pod` types and casts without a dependency of your own.
pub use bytemuck;
pub use context::{Context, ContextDesc};
pub use dispatch::Binding;
pub use memory::desc::AllocDesc;
pub use memory::handle::{BufferHandle, TextureHandle};
pub use memory_view::Memory;
pub use owned::Owned;
pub use queue::SubmissionIndex;
pub use types::debug::DebugSettings;
pub use types::error::{Error, Result, StaleReason};
pub use types::error_kind::ErrorKind;
pub use types::{Label, MemoryAdvice, MemoryKind};
/// The wgpu version vramkit is built on, for interop through [`backend::wgpu::WgpuBackend`].
#[cfg(feature = "wgpu")]
pub use wgpu;

/// The README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
