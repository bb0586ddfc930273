//! # vramkit-kernels
//!
//! Kernels on [`vramkit`]'s memory: each a WGSL file in `shaders/` with a CUDA C twin,
//! behind one function that takes handles, checks shapes and sizes against the allocations,
//! and launches the kernel without bounds checks only after that
//! ([`Context::dispatch_unchecked`](vramkit::Context::dispatch_unchecked)); with the feature
//! `reference`, a CPU twin of each for tests.
//!
//! - [`matmul`], [`matmul_with`]: f32 matmul (register-blocked, tiled, or the vendor BLAS);
//!   [`matmul_typed`]: f16 inputs, on cooperative matrices where the adapter has them.
//! - [`add`], [`axpy`], [`scale`]: elementwise.
//! - [`image`]: 4K image kernels (blur, resize, colour, conversions between pixel formats).
//! - [`split_matmul`]: one matmul's rows over a [`DeviceSet`](vramkit::devices::DeviceSet).
//! - [`shaders`]: the registry of every kernel's source, for validation and for your own
//!   launches.
//!
//! ```no_run
//! use vramkit::{AllocDesc, Context, ContextDesc};
//! use vramkit_kernels::{matmul, MatmulDims};
//! let ctx = Context::new(ContextDesc::default())?;
//! let d = MatmulDims { m: 64, n: 64, k: 64 };
//! let [a, b, c] = ["a", "b", "c"].map(|l| ctx.alloc(AllocDesc::new(l, 64 * 64 * 4)));
//! let (a, b, c) = (a?, b?, c?);
//! ctx.upload_slice(a, &vec![1.0f32; 64 * 64])?;
//! ctx.upload_slice(b, &vec![2.0f32; 64 * 64])?;
//! matmul(&ctx, a, b, c, d)?;
//! assert_eq!(ctx.download_vec::<f32>(c)?[0], 128.0);
//! # Ok::<(), vramkit::Error>(())
//! ```

#![deny(clippy::unwrap_used)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod blur_intermediate;
mod elementwise;
pub mod image;
#[cfg(any(test, feature = "reference"))]
pub mod image_cpu;
mod matmul;
pub mod matmul_f16;
mod matmul_f16_cpu;
mod matmul_plan;
#[cfg(test)]
mod params_layout;
pub mod shaders;
mod split_matmul;
mod split_plan;

pub use elementwise::{add, axpy, scale};
#[cfg(any(test, feature = "reference"))]
pub use elementwise::{add_cpu, axpy_cpu, scale_cpu};
#[cfg(any(test, feature = "reference"))]
pub use matmul::matmul_cpu;
pub use matmul::{matmul, matmul_with, MatmulDims, MatmulKernel, TiledConfig};
pub use matmul_f16::{matmul_f16_kernel, matmul_typed, CoopTile, MatmulDtype};
pub use matmul_f16_cpu::{f16_bits_to_f32, f32_to_f16_bits};
#[cfg(any(test, feature = "reference"))]
pub use matmul_f16_cpu::{matmul_f16_bound, matmul_f16_cpu};
pub use split_matmul::{split_matmul, split_matmul_rows};
pub use split_plan::balanced_rows;

/// The README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
