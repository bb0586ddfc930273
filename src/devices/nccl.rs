//! All-reduce across CUDA devices with NCCL (cargo feature `nccl`): an [`NcclGroup`] holds one
//! communicator per device of a [`DeviceSet<CudaBackend>`] (`ncclCommInitAll`, one process), an
//! [`NcclRank`] one rank of a communicator spread over several processes (`ncclCommInitRank`
//! with an [`NcclId`] the app's launcher sends to every process). Both reduce f32 buffers in
//! place ([`ReduceOp`]: sum, product, max, min, average).
//!
//! **Ordering.** Each device's part runs on that context's own CUDA stream, the one all its
//! work runs on: it starts after everything recorded on the context before (uploads, kernels,
//! copies) and work recorded after it (a download, a kernel) sees the result. All parts are
//! issued in one `ncclGroupStart`/`ncclGroupEnd`, so one thread drives every device.
//!
//! **Budgets.** The buffers are ordinary allocations of their contexts, inside their budgets;
//! the all-reduce's submissions are recorded as their last use, so the memory manager neither
//! reuses, moves (compaction) nor frees them before it completes, as for a kernel. The contexts'
//! memory managers are locked while the parts are issued (in the same order as
//! [`DeviceSet::copy`] locks them). NCCL's own buffers (its channels, a few hundred MiB per
//! communicator on NVLink machines) are NCCL's: they count in each device's free memory, not in
//! a context's budget. Buffers must be [`MemoryKind::Device`](crate::MemoryKind::Device).
//!
//! **One rank per GPU.** NCCL refuses a communicator with two ranks on one GPU
//! (`ncclInvalidUsage`, "Duplicate GPU detected"): a set of two contexts on one device, or two
//! processes on one device, gets [`Error::Unsupported`] saying so. (NCCL 2.30 has an
//! experimental opt-in, `NCCL_MULTI_RANK_GPU_ENABLE=1`; where it is set NCCL decides.)
//!
//! **Environment.** NCCL reads its own variables (`NCCL_DEBUG=WARN` explains its failures;
//! `NCCL_NVLS_ENABLE=0` keeps NVLink multicast off, which shared machines need); vramkit sets
//! none.
//!
//! **The library.** NCCL is loaded at run time, so the feature builds with no NCCL installed;
//! without it every call is [`Error::Unsupported`] with what to install. cudarc looks for it as
//! `libnccl.so` (and `libnccl.so.1`, `.9` to `.13`) on the library path, while NVIDIA's
//! packages and pip's `nvidia-nccl-cu13` / `-cu12` ship `libnccl.so.2`: link it as
//! `libnccl.so` in a folder on `LD_LIBRARY_PATH` (the error names the file it found there).

use std::sync::{Arc, Mutex, MutexGuard};

use super::{DeviceHandle, DeviceSet};
use crate::backend::cuda::collective::{self, Comm, Part};
use crate::backend::cuda::CudaBackend;
use crate::backend::Storage;
use crate::memory::manager::{Access, Manager};
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::MemoryKind;
pub use crate::types::ReduceOp;
use crate::{BufferHandle, Context};

/// The NCCL version loaded, as `(major, minor, patch)`; loads it on first use.
///
/// # Errors
/// [`Error::Unsupported`] when NCCL is not installed or too old (before 2.13), saying what to
/// install or set.
pub fn nccl_version() -> Result<(u32, u32, u32)> {
    let v = collective::load()?.unsigned_abs();
    Ok((v / 10000, v / 100 % 100, v % 100))
}

/// One NCCL communicator per device of a [`DeviceSet<CudaBackend>`] (`ncclCommInitAll`), for
/// in-place f32 all-reduce.
///
/// Each device's part runs on its context's own stream, after the work recorded there before
/// and before the work recorded after; the buffers stay in their contexts' budgets and are
/// recorded as used by the all-reduce, so they are not reused, moved or freed before it
/// completes. NCCL's own buffers are outside the budgets. NCCL allows one rank per GPU: a set
/// with two contexts of one device is [`Error::Unsupported`]. NCCL is loaded at run time by the
/// name `libnccl.so` (link the `libnccl.so.2` of NVIDIA's packages or pip's `nvidia-nccl-cu13`
/// as `libnccl.so` in a folder on `LD_LIBRARY_PATH`).
///
/// ```no_run
/// use vramkit::devices::{DeviceSet, NcclGroup, ReduceOp};
/// use vramkit::{AllocDesc, ContextDesc};
/// let set = DeviceSet::cuda(ContextDesc::default(), None)?;
/// let nccl = NcclGroup::new(&set)?;
/// let bufs = (0..set.len())
///     .map(|d| set.alloc_on(d, AllocDesc::new("grads", 4 << 20)))
///     .collect::<Result<Vec<_>, _>>()?;
/// nccl.all_reduce(&set, &bufs, ReduceOp::Sum)?;
/// # Ok::<(), vramkit::Error>(())
/// ```
pub struct NcclGroup {
    // Field order is drop order: the communicators go before the contexts they run on.
    /// Rank `i` on device `i`; one collective at a time.
    comms: Mutex<Vec<Comm>>,
    /// The set's contexts, in device order (to recognise the set).
    contexts: Vec<Arc<Context<CudaBackend>>>,
}

impl std::fmt::Debug for NcclGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclGroup")
            .field("ranks", &self.contexts.len())
            .finish_non_exhaustive()
    }
}

impl NcclGroup {
    /// Communicators over every device of `set`, rank `i` on device `i`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when NCCL is not installed (saying what to install) or two contexts
    /// of the set share a GPU; [`Error::Cuda`] for other NCCL failures.
    pub fn new(set: &DeviceSet<CudaBackend>) -> Result<Self> {
        let backends: Vec<&CudaBackend> = set.devices().iter().map(|c| c.backend()).collect();
        let comms = Comm::init_all(&backends)?;
        Ok(Self {
            contexts: set.devices().to_vec(),
            comms: Mutex::new(comms),
        })
    }

    /// How many ranks (devices).
    pub fn ranks(&self) -> usize {
        self.contexts.len()
    }

    /// Reduces `bufs` in place with `op`: one buffer per device in set order (`bufs[i]` on
    /// device `i`), all of the same size in whole f32; afterwards each holds the reduction of
    /// all. Returns once the all-reduce is queued on every device's stream, ordered with each
    /// context's work.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a set other than the group's, a buffer on another device
    /// than its place, or a size that is not whole f32; [`Error::ShapeMismatch`] for a count
    /// other than the set's length or sizes that differ; [`Error::StaleHandle`] for a released
    /// or foreign handle; [`Error::Unsupported`] for a buffer that is not device memory;
    /// [`Error::Cuda`] for NCCL failures.
    pub fn all_reduce(
        &self,
        set: &DeviceSet<CudaBackend>,
        bufs: &[DeviceHandle],
        op: ReduceOp,
    ) -> Result<()> {
        let same = set.len() == self.contexts.len()
            && set
                .devices()
                .iter()
                .zip(&self.contexts)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if !same {
            return Err(Error::InvalidParameter {
                name: "set",
                value: format!("a set of {} devices", set.len()),
                reason: "not the set this NcclGroup was made from; use NcclGroup::new(set)",
            });
        }
        if bufs.len() != self.contexts.len() {
            return Err(Error::ShapeMismatch {
                expected: format!(
                    "{} buffers, one per device of the set in its order",
                    self.contexts.len()
                ),
                actual: format!("{} buffers", bufs.len()),
            });
        }
        if let Some((i, b)) = bufs.iter().enumerate().find(|(i, b)| b.device != *i) {
            return Err(Error::InvalidParameter {
                name: "bufs",
                value: format!("buffer {i} on device {}", b.device),
                reason: "bufs[i] must live on device i of the set",
            });
        }
        let handles: Vec<BufferHandle> = bufs.iter().map(|b| b.handle).collect();
        let count = f32_count(&self.contexts, &handles)?;
        let comms = lock(&self.comms);
        reduce(&self.contexts, &comms, &handles, count, op)
    }
}

/// The bytes of an NCCL unique id: what every rank of a communicator spread over processes
/// needs. Rank 0 (or the launcher) makes one with [`new`](Self::new) and sends
/// [`as_bytes`](Self::as_bytes) to the others, which rebuild it with
/// [`from_bytes`](Self::from_bytes).
#[derive(Clone, Copy)]
pub struct NcclId(cudarc::nccl::sys::ncclUniqueId);

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NcclId(..)")
    }
}

impl NcclId {
    /// The number of bytes of an id.
    pub const BYTES: usize = 128;

    /// A fresh id (`ncclGetUniqueId`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when NCCL is not installed; [`Error::Cuda`] when NCCL fails.
    pub fn new() -> Result<Self> {
        collective::unique_id().map(Self)
    }

    /// The id's bytes, to send to the other ranks.
    pub fn as_bytes(&self) -> [u8; Self::BYTES] {
        self.0.internal.map(|c| c as u8)
    }

    /// The id from the bytes [`as_bytes`](Self::as_bytes) gave.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `bytes` is not [`NcclId::BYTES`] long.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes: [u8; Self::BYTES] = bytes.try_into().map_err(|_| Error::InvalidParameter {
            name: "bytes",
            value: format!("{} bytes", bytes.len()),
            reason: "an NCCL id is NcclId::BYTES (128) bytes, as NcclId::as_bytes gives",
        })?;
        Ok(Self(cudarc::nccl::sys::ncclUniqueId {
            internal: bytes.map(|b| b as std::ffi::c_char),
        }))
    }
}

/// One rank of a communicator spread over processes (or threads), one GPU each: the app's
/// launcher starts `nranks` processes, gives each its rank and the same [`NcclId`].
///
/// ```no_run
/// use std::sync::Arc;
/// use vramkit::devices::{NcclId, NcclRank, ReduceOp};
/// use vramkit::{AllocDesc, Context, ContextDesc};
/// # let (rank, nranks) = (0, 1);
/// # let bytes = NcclId::new()?.as_bytes();
/// let ctx = Arc::new(Context::cuda(rank, ContextDesc::default())?);
/// let id = NcclId::from_bytes(&bytes)?; // sent by rank 0
/// let comm = NcclRank::new(ctx.clone(), &id, rank, nranks)?;
/// let grads = ctx.alloc(AllocDesc::new("grads", 4 << 20))?;
/// // SAFETY: every rank reduces a buffer of 4 MiB here, with the same op, in the same order.
/// unsafe { comm.all_reduce(grads, ReduceOp::Sum)? };
/// # Ok::<(), vramkit::Error>(())
/// ```
pub struct NcclRank {
    // Field order is drop order: the communicator goes before the context it runs on.
    comm: Mutex<Comm>,
    context: Arc<Context<CudaBackend>>,
    rank: usize,
    nranks: usize,
}

impl std::fmt::Debug for NcclRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclRank")
            .field("rank", &self.rank)
            .field("nranks", &self.nranks)
            .finish_non_exhaustive()
    }
}

impl NcclRank {
    /// Joins rank `rank` of `nranks` on `context`'s device; blocks until every rank has joined
    /// with the same `id`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `rank >= nranks` or a count past `i32`;
    /// [`Error::Unsupported`] when NCCL is not installed or another rank uses this GPU;
    /// [`Error::Cuda`] for other NCCL failures.
    pub fn new(
        context: Arc<Context<CudaBackend>>,
        id: &NcclId,
        rank: usize,
        nranks: usize,
    ) -> Result<Self> {
        let bad = |reason| Error::InvalidParameter {
            name: "rank",
            value: format!("rank {rank} of {nranks}"),
            reason,
        };
        let n = i32::try_from(nranks).map_err(|_| bad("at most i32::MAX ranks"))?;
        if rank >= nranks {
            return Err(bad("the rank must be below the number of ranks"));
        }
        let r = i32::try_from(rank).map_err(|_| bad("at most i32::MAX ranks"))?;
        let comm = Comm::init_rank(context.backend(), id.0, r, n)?;
        Ok(Self {
            context,
            comm: Mutex::new(comm),
            rank,
            nranks,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks the communicator has.
    pub fn ranks(&self) -> usize {
        self.nranks
    }

    /// The context this rank runs on.
    pub fn context(&self) -> &Arc<Context<CudaBackend>> {
        &self.context
    }

    /// Reduces `buf` (of this rank's context) in place with every rank's buffer of the same
    /// size; each rank calls it, in the same order of collectives. Returns once queued on the
    /// context's stream, ordered with its work.
    ///
    /// # Safety
    /// This rank checks only its own buffer; what the other ranks pass is beyond it, and NCCL
    /// leaves a mismatch undefined. The caller promises:
    /// 1. Every rank passes a buffer of the same size and the same `op`.
    /// 2. Every rank issues its collectives on this communicator in the same order.
    ///
    /// (A rank that returns an error before issuing leaves the others waiting: they can only
    /// be ended by dropping their `NcclRank`s after aborting the job. [`NcclGroup`], which sees
    /// every rank's buffer, is safe.)
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a size that is not whole f32; [`Error::StaleHandle`] for
    /// a released or foreign handle; [`Error::Unsupported`] for a buffer that is not device
    /// memory, or a communicator aborted by an earlier failed collective; [`Error::Cuda`] for
    /// NCCL failures.
    pub unsafe fn all_reduce(&self, buf: BufferHandle, op: ReduceOp) -> Result<()> {
        let contexts = std::slice::from_ref(&self.context);
        let count = f32_count(contexts, &[buf])?;
        let comm = lock(&self.comm);
        reduce(contexts, std::slice::from_ref(&*comm), &[buf], count, op)
    }
}

/// The f32 count of the buffers, all of one size in whole f32.
fn f32_count(contexts: &[Arc<Context<CudaBackend>>], handles: &[BufferHandle]) -> Result<usize> {
    let mut size = None;
    for (ctx, &h) in contexts.iter().zip(handles) {
        let s = ctx.observe().size_of(h)?;
        match size {
            None => size = Some(s),
            Some(first) if first != s => {
                return Err(Error::ShapeMismatch {
                    expected: format!("buffers of one size ({first} bytes, the first one's)"),
                    actual: format!("`{}` of {s} bytes", ctx.observe().allocation_info(h)?.label),
                })
            }
            Some(_) => {}
        }
    }
    let size = size.unwrap_or(0);
    if !size.is_multiple_of(4) {
        return Err(Error::InvalidParameter {
            name: "bufs",
            value: format!("{size} bytes"),
            reason: "an f32 all-reduce needs a whole number of 4-byte f32",
        });
    }
    usize::try_from(size / 4).map_err(|_| Error::InvalidParameter {
        name: "bufs",
        value: format!("{size} bytes"),
        reason: "more f32 than this host can count",
    })
}

/// Locks the contexts' managers (in address order, as `direct.rs` does), resolves each buffer
/// (`count` f32 from its start, device memory), issues the all-reduce and records its
/// submissions as each buffer's last use.
fn reduce(
    contexts: &[Arc<Context<CudaBackend>>],
    comms: &[Comm],
    handles: &[BufferHandle],
    count: usize,
    op: ReduceOp,
) -> Result<()> {
    let mut order: Vec<usize> = (0..contexts.len()).collect();
    order.sort_by_key(|&i| Arc::as_ptr(&contexts[i]));
    let mut guards: Vec<Option<MutexGuard<'_, Manager<CudaBackend>>>> =
        contexts.iter().map(|_| None).collect();
    for i in order {
        guards[i] = Some(contexts[i].manager());
    }
    let managers: Vec<&mut Manager<CudaBackend>> =
        guards.iter_mut().flatten().map(|g| &mut **g).collect();
    let len = count as u64 * 4;
    let indices = {
        let mut parts = Vec::with_capacity(contexts.len());
        for (((ctx, m), &h), comm) in contexts.iter().zip(&managers).zip(handles).zip(comms) {
            let backend = ctx.backend();
            let r = m.resolve(h, 0, Some(len), Access::Words, backend.limits())?;
            if r.kind != MemoryKind::Device {
                return Err(Error::Unsupported {
                    what: format!("an NCCL all-reduce of a {:?} allocation", r.kind),
                    reason: "NCCL reduces device memory: allocate MemoryKind::Device".into(),
                });
            }
            parts.push(Part {
                backend,
                comm,
                block: r.block,
                offset: r.offset,
            });
        }
        // SAFETY: `resolve` placed each range (`count` f32 from the allocation's start) inside
        // its live Device block; the submissions returned are recorded below as each
        // allocation's last use, with the managers still locked, and blocks are freed, reused
        // or moved only after their allocations' last use completed. The buffers are of
        // distinct contexts (one per device or rank), and allocations never share bytes. The
        // parts are every rank this group or rank holds, and the caller holds the lock of their
        // communicators.
        unsafe { collective::all_reduce(&parts, count, collective::op(op))? }
    };
    for ((m, &h), index) in managers.into_iter().zip(handles).zip(indices) {
        m.touch(h, index);
    }
    Ok(())
}
