//! Several devices of one host under one budget view: a [`DeviceSet`]
//! holds one [`Context`] per device (every wgpu adapter or CUDA device: `open.rs`; or contexts
//! the caller made), places allocations on a named device or on the one with the most room,
//! keeps an optional total budget over the set, sums statistics, copies between devices
//! (`copy.rs`: device to device where the backend has a path, `direct.rs` over
//! [`Storage::copy_to_peer`](crate::backend::Storage::copy_to_peer); else through host
//! staging); `vramkit_kernels::split_matmul` splits a matmul's rows over them.
//!
//! Handles of a set ([`DeviceHandle`]) say their device; one used with another device's context
//! is refused as every foreign handle is ([`Error::StaleHandle`] with
//! [`StaleReason::ForeignContext`](crate::StaleReason::ForeignContext)), and a device index past
//! the set is [`Error::InvalidParameter`].
//!
//! Each context keeps its own budget (its [`ContextDesc`](crate::ContextDesc)); the set's total
//! holds over what the set allocates: an allocation through the set that would take the bytes
//! the contexts hold (blocks and staging, [`MemoryStats::reserved`]) past the total is undone
//! and refused with [`Error::OverBudget`]. Allocations made on a context directly count in the
//! total but are not refused by it.

mod copy;
mod direct;
#[cfg(feature = "nccl")]
mod nccl;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
mod open;
mod stats;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub use copy::CopyPath;
#[cfg(feature = "nccl")]
pub use nccl::{nccl_version, NcclGroup, NcclId, NcclRank, ReduceOp};
pub use stats::SetStats;

use crate::backend::Backend;
use crate::memory::MemoryStats;
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::{AllocDesc, BufferHandle, Context};

/// An allocation of a [`DeviceSet`]: the device it lives on and its handle there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceHandle {
    /// Index of the device in the set.
    pub device: usize,
    /// The allocation's handle in that device's context.
    pub handle: BufferHandle,
}

/// Contexts of several devices (or several contexts of one device) under one budget view. See
/// the [module docs](self).
///
/// ```
/// use vramkit::devices::DeviceSet;
/// use vramkit::{AllocDesc, Context, ContextDesc};
/// let desc = ContextDesc { budget: Some(64 << 20), ..Default::default() };
/// let set = DeviceSet::from_contexts(vec![Context::host(desc.clone()), Context::host(desc)], None)?;
/// let a = set.alloc_on(0, AllocDesc::new("a", 8 << 20))?;
/// let b = set.alloc_anywhere(AllocDesc::new("b", 8 << 20))?;
/// assert_eq!(b.device, 1, "device 1 has the most room");
/// set.device(a.device)?.upload(a.handle, &[7; 1000])?;
/// set.copy(a, b)?;
/// assert_eq!(set.device(1)?.download(b.handle)?[..1000], [7; 1000]);
/// # Ok::<(), vramkit::Error>(())
/// ```
pub struct DeviceSet<B: Backend = crate::backend::DefaultBackend> {
    devices: Vec<Arc<Context<B>>>,
    total: Option<u64>,
    /// Holds the total's check and the allocation it admits together (sets with a total).
    admit: Mutex<()>,
    /// Where the next tie of `alloc_anywhere` starts looking.
    next: AtomicUsize,
}

impl<B: Backend> std::fmt::Debug for DeviceSet<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSet")
            .field("devices", &self.devices)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> DeviceSet<B> {
    /// A set of contexts the caller made (one per device, or several on one device), with an
    /// optional total budget over them. The set holds them behind `Arc`s
    /// ([`devices`](Self::devices)), so owning handles work on them
    /// ([`Context::alloc_owned`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no contexts.
    pub fn from_contexts(devices: Vec<Context<B>>, total_budget: Option<u64>) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::InvalidParameter {
                name: "contexts",
                value: "none".into(),
                reason: "a device set needs at least one context",
            });
        }
        Ok(Self {
            devices: devices.into_iter().map(Arc::new).collect(),
            total: total_budget,
            admit: Mutex::new(()),
            next: AtomicUsize::new(0),
        })
    }

    /// How many devices (contexts) the set holds.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether the set is empty (never: [`from_contexts`](Self::from_contexts) refuses none).
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The contexts, in device order.
    pub fn devices(&self) -> &[Arc<Context<B>>] {
        &self.devices
    }

    /// The context of device `index`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an index past the set.
    pub fn device(&self, index: usize) -> Result<&Arc<Context<B>>> {
        self.devices
            .get(index)
            .ok_or_else(|| Error::InvalidParameter {
                name: "device",
                value: index.to_string(),
                reason: "past the devices of the set; use an index below DeviceSet::len()",
            })
    }

    /// The set's total budget, if it has one.
    pub fn total_budget(&self) -> Option<u64> {
        self.total
    }

    /// Allocates on device `index`, within its context's budget and the set's total.
    ///
    /// # Errors
    /// As [`Context::alloc`]; [`Error::OverBudget`] when the total would be passed;
    /// [`Error::InvalidParameter`] for an index past the set.
    pub fn alloc_on(&self, index: usize, desc: AllocDesc) -> Result<DeviceHandle> {
        let ctx = self.device(index)?;
        // Only a total ties the devices' allocations together; without one they run side by side.
        let _admit = self.total.map(|_| lock(&self.admit));
        let (size, kind) = (desc.size, desc.kind);
        let Some(total) = self.total else {
            let handle = ctx.alloc(desc)?;
            return Ok(DeviceHandle {
                device: index,
                handle,
            });
        };
        let handle = ctx.alloc(desc.clone())?;
        if self.stats().reserved <= total {
            return Ok(DeviceHandle {
                device: index,
                handle,
            });
        }
        // Past the total. Remedies in order, as one context's budget takes them: what the
        // other devices can give back (`trim`: their cached blocks and idle staging, after a
        // compaction pass), then this device's (the request made again after its context gave
        // back what it could).
        for (i, other) in self.devices.iter().enumerate() {
            if i != index {
                if let Err(e) = other.memory().trim() {
                    ctx.release(handle)?;
                    return Err(e);
                }
            }
        }
        let handle = if self.stats().reserved <= total {
            Some(handle)
        } else {
            ctx.release(handle)?;
            ctx.memory().trim()?;
            let again = ctx.alloc(desc)?;
            if self.stats().reserved <= total {
                Some(again)
            } else {
                ctx.release(again)?;
                ctx.memory().trim()?;
                None
            }
        };
        let Some(handle) = handle else {
            // Measured after every remedy: what the set holds, and what fits now.
            let stats = self.stats();
            let largest_free = ctx.stats().kinds[kind.index()].largest_free;
            return Err(Error::OverBudget {
                requested: size,
                limit: total,
                in_use: stats.in_use,
                reserved: stats.reserved,
                largest_free,
                fits_now: largest_free.max(total.saturating_sub(stats.reserved)),
            });
        };
        Ok(DeviceHandle {
            device: index,
            handle,
        })
    }

    /// Allocates on the device with the most room under its budget (its budget less the bytes
    /// in its allocations and staging; a device without a budget has the free memory its API
    /// reports, or unbounded room where it reports none); ties go round-robin. A device that
    /// refuses (its budget, fragmentation) passes the request to the next with room.
    ///
    /// # Errors
    /// The last device's error when none can hold it; [`Error::OverBudget`] for the total.
    pub fn alloc_anywhere(&self, desc: AllocDesc) -> Result<DeviceHandle> {
        let n = self.devices.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut order: Vec<(u64, usize)> = (0..n)
            .map(|k| {
                let i = (start + k) % n;
                (room(&self.devices[i], &self.devices[i].stats()), i)
            })
            .collect();
        // Most room first; among equals, round-robin order from `start` (a stable sort).
        order.sort_by_key(|&(room, _)| std::cmp::Reverse(room));
        let mut last = None;
        for (_, i) in order {
            match self.alloc_on(i, desc.clone()) {
                Ok(h) => return Ok(h),
                Err(e @ (Error::OverBudget { .. } | Error::OutOfMemory { .. })) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(Error::Internal {
            message: "a device set without devices".into(),
        }))
    }

    /// Releases an allocation of the set.
    ///
    /// # Errors
    /// As [`Context::release`]; [`Error::InvalidParameter`] for a device past the set.
    pub fn release(&self, h: DeviceHandle) -> Result<()> {
        self.device(h.device)?.release(h.handle)
    }

    /// Each device's statistics, and their sums.
    pub fn stats(&self) -> SetStats {
        SetStats::new(self.devices.iter().map(|c| c.stats()).collect(), self.total)
    }

    /// A human-readable report: the set's sums (as [`SetStats`]'s `Display`), then each
    /// device's [`Observe::summary`](crate::observe::Observe::summary) table.
    pub fn summary(&self) -> String {
        let mut out = self.stats().to_string();
        for (i, ctx) in self.devices.iter().enumerate() {
            out.push_str(&format!("\n\n== device {i}\n{}", ctx.observe().summary()));
        }
        out
    }

    /// How many items of `bytes_per_item` fit now across the set: the sum of each device's
    /// [`Memory::max_batch`](crate::Memory::max_batch), and within the total budget's room.
    ///
    /// # Errors
    /// As [`Memory::max_batch`](crate::Memory::max_batch).
    pub fn max_batch(&self, bytes_per_item: u64) -> Result<u64> {
        let mut sum = 0u64;
        for ctx in &self.devices {
            sum = sum.saturating_add(ctx.memory().max_batch(bytes_per_item)?);
        }
        Ok(match self.total {
            Some(total) => sum.min(total.saturating_sub(self.stats().reserved) / bytes_per_item),
            None => sum,
        })
    }
}

/// Bytes device `ctx` can still give under its budget (or its free memory).
fn room<B: Backend>(ctx: &Context<B>, s: &MemoryStats) -> u64 {
    match s.budget {
        Some(b) => b.saturating_sub(s.in_use.saturating_add(s.staging)),
        None => ctx.backend().memory_info().map_or(u64::MAX, |m| m.free),
    }
}
