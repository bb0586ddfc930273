//! The memory manager, written once over any [`Storage`](crate::backend::Storage): pools of
//! blocks sub-allocated behind generational handles (`pool`, best fit across blocks, split and
//! coalesce, cached blocks, growing segments), block sizes (`geometry`), budgets, release in
//! queue order (device memory) or after the GPU is done (host-visible memory, `release`),
//! compaction that keeps handles valid (`compact`), staging and statistics. Textures are held
//! beside the pools (`manager/textures.rs`: one driver allocation each, same handles, budget and
//! counters, kind [`MemoryKind::Texture`](crate::MemoryKind::Texture)) and move through the same staging ring in padded
//! rows (`texture_transfer`). Users reach it through [`Context`](crate::Context).
//!
//! Validation happens here, once: `manager/resolve.rs` turns a handle, a byte range and an
//! access (host bytes, device words, a kernel binding, advice) into a range of a raw block, or a
//! typed error; kernel launches, transfers, advice and the vendor matmul all go through it, and
//! the backend's `unsafe fn`s only ever see what it returned. [`AuditReport`](crate::observe::AuditReport) re-derives every
//! counter and the pools' layout for tests and bug reports.

pub(crate) mod access;
pub(crate) mod audit;
mod budget;
pub(crate) mod desc;
mod geometry;
pub(crate) mod handle;
pub(crate) mod lease;
pub(crate) mod manager;
mod pool;
mod release;
pub(crate) mod report;
pub(crate) mod staging;
pub(crate) mod stats;
pub(crate) mod streams;
mod texture_transfer;
pub(crate) mod trace;
#[cfg(feature = "trace-export")]
mod trace_export;
pub(crate) mod transfer;
mod transfer_with;

pub use manager::compact::{CompactReport, CompactionDesc};

pub(crate) use desc::{AllocDesc, AllocationInfo};
pub(crate) use geometry::Geometry;
pub(crate) use handle::next_context_id;
pub(crate) use handle::{BufferHandle, TextureHandle};
pub(crate) use stats::MemoryStats;
pub(crate) use trace::EventKind;
