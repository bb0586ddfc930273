//! The ground floor: the vocabulary every layer shares (memory kinds, labels, device limits,
//! textures, collectives), the one error type, and host byte copies. Nothing here names a
//! layer above it; the public items are re-exported where users find them.

#[cfg(feature = "nccl")]
pub(crate) mod collective;
pub(crate) mod debug;
pub(crate) mod device;
pub(crate) mod error;
pub(crate) mod error_kind;
pub(crate) mod host_bytes;
pub(crate) mod memory;
pub(crate) mod texture;
pub(crate) mod units;
pub(crate) mod write_only;

#[cfg(feature = "nccl")]
pub use collective::ReduceOp;
pub use device::{BackendLimits, CooperativeMatrix, CooperativeScalar, DeviceInfo, MemoryInfo};
pub use memory::{Label, MemoryAdvice, MemoryKind, QueueIndex};

/// Locks a mutex, ignoring poisoning: every critical section of vramkit leaves its data valid
/// between statements, so a panic elsewhere does not make it unusable.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
