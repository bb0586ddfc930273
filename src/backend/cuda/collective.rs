//! NCCL communicators and all-reduce on CUDA backends' streams (cargo feature `nccl`): loading
//! the library at run time, creating communicators (`ncclCommInitAll` for one process,
//! `ncclCommInitRank` for one rank of several processes), issuing an all-reduce in a group on
//! each backend's own stream, and NCCL errors as [`Error`]s. The validation (handles, sizes,
//! devices) and the memory manager's bookkeeping live in `devices/nccl.rs`.

use std::ffi::{c_void, CStr};
use std::sync::OnceLock;

use cudarc::nccl::result::{self as nc, NcclError};
use cudarc::nccl::sys::{self, ncclResult_t as R};

use super::{CudaBackend, CudaBlock};
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::QueueIndex;

/// The oldest NCCL whose entry points are used here (`ncclGetLastError` came in 2.13).
const MIN_VERSION: i32 = 21300;

/// The name NCCL's pip wheels and packages install; cudarc looks for `libnccl.so`.
const SONAME: &str = "libnccl.so.2";

/// Loads NCCL once and checks its version; the version (`major * 10000 + minor * 100 + patch`).
///
/// # Errors
/// [`Error::Unsupported`] when the library is missing or too old, saying what to install or set.
pub(crate) fn load() -> Result<i32> {
    static LOADED: OnceLock<std::result::Result<i32, String>> = OnceLock::new();
    LOADED
        .get_or_init(probe)
        .clone()
        .map_err(|reason| Error::Unsupported {
            what: "NCCL collectives".into(),
            reason,
        })
}

fn probe() -> std::result::Result<i32, String> {
    // SAFETY: only tries to dlopen the library by the names cudarc knows.
    if !unsafe { sys::is_culib_present() } {
        let found = std::env::var_os("LD_LIBRARY_PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(SONAME))
            .find(|p| p.exists());
        return Err(match found {
            Some(p) => format!(
                "found {} but it is loaded by the name `libnccl.so`: make a link, e.g. `mkdir -p \
                 /tmp/nccl-link && ln -sf {} /tmp/nccl-link/libnccl.so`, and put /tmp/nccl-link \
                 on LD_LIBRARY_PATH",
                p.display(),
                p.display()
            ),
            None => "NCCL (libnccl.so) is not on the library path: install it (the NVIDIA \
                     package libnccl2, or pip's nvidia-nccl-cu13 / -cu12, whose lib folder holds \
                     libnccl.so.2), link it as libnccl.so and put that folder on LD_LIBRARY_PATH"
                .into(),
        });
    }
    // cudarc panics when the library lacks a symbol: probe the version first.
    let version = std::panic::catch_unwind(nc::get_nccl_version)
        .map_err(|_| "the NCCL library lacks ncclGetVersion: install NCCL 2.13 or newer")?
        .map_err(|e| format!("ncclGetVersion failed: {}", describe(&e)))?;
    if version < MIN_VERSION {
        return Err(format!(
            "NCCL {version} is too old: vramkit needs 2.13 or newer (install a newer libnccl2 \
             or nvidia-nccl-cu13)"
        ));
    }
    log::info!(
        "vramkit: NCCL {}.{}.{}",
        version / 10000,
        version / 100 % 100,
        version % 100
    );
    Ok(version)
}

/// `ncclX: description (last error: ...)`.
fn describe(e: &NcclError) -> String {
    // SAFETY: NCCL returns static strings for any result code.
    let text = unsafe { CStr::from_ptr(sys::ncclGetErrorString(e.0)) }.to_string_lossy();
    // SAFETY: a null communicator asks for the last error of any; NCCL keeps the string.
    let last = unsafe { sys::ncclGetLastError(std::ptr::null_mut()) };
    let last = if last.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string NCCL owns.
        unsafe { CStr::from_ptr(last) }
            .to_string_lossy()
            .into_owned()
    };
    if last.is_empty() {
        format!("{:?}: {text}", e.0)
    } else {
        format!("{:?}: {text} (last error: {last})", e.0)
    }
}

/// An NCCL error as [`Error::Cuda`].
pub(crate) fn error(op: &'static str, e: &NcclError) -> Error {
    Error::Cuda {
        op,
        code: format!("{:?}", e.0),
        message: describe(e),
    }
}

/// An error of creating a communicator: NCCL refuses two ranks on one GPU with
/// `ncclInvalidUsage` ("Duplicate GPU detected"), which is [`Error::Unsupported`].
fn init_error(op: &'static str, e: &NcclError) -> Error {
    if e.0 == R::ncclInvalidUsage {
        return Error::Unsupported {
            what: format!("an NCCL communicator ({op})"),
            reason: format!(
                "NCCL needs one rank per GPU, and refused this one ({}): give each rank its own \
                 device, or copy between contexts of one device with DeviceSet::copy",
                describe(e)
            ),
        };
    }
    error(op, e)
}

/// One NCCL communicator (one rank), destroyed when dropped, or aborted for good when a
/// collective failed half-issued.
pub(crate) struct Comm(sys::ncclComm_t, std::sync::atomic::AtomicBool);

// SAFETY: a communicator may be used from any thread; its owners serialise the calls that use
// it (a mutex around each collective), as NCCL requires.
unsafe impl Send for Comm {}
// SAFETY: as above.
unsafe impl Sync for Comm {}

impl Drop for Comm {
    fn drop(&mut self) {
        if self.aborted() {
            return;
        }
        // SAFETY: destroyed once; NCCL waits for the communicator's work in flight.
        if let Err(e) = unsafe { nc::comm_destroy(self.0) } {
            log::warn!(
                "vramkit: destroying an NCCL communicator failed: {}",
                describe(&e)
            );
        }
    }
}

impl Comm {
    /// One communicator per backend, rank `i` on `backends[i]`'s device (`ncclCommInitAll`).
    ///
    /// # Errors
    /// As [`load`]; [`Error::Unsupported`] when two backends share a device; [`Error::Cuda`].
    pub(crate) fn init_all(backends: &[&CudaBackend]) -> Result<Vec<Comm>> {
        load()?;
        let devices: Vec<i32> = backends.iter().map(|b| b.device.ordinal).collect();
        for b in backends {
            b.check_device()?;
        }
        let n = i32::try_from(devices.len()).map_err(|_| Error::InvalidParameter {
            name: "devices",
            value: devices.len().to_string(),
            reason: "too many devices for one communicator",
        })?;
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `comms` holds `n` slots and `devices` `n` valid ordinals.
        unsafe { nc::comm_init_all(comms.as_mut_ptr(), n, devices.as_ptr()) }
            .map_err(|e| init_error("ncclCommInitAll", &e))?;
        Ok(comms.into_iter().map(Comm::from_raw).collect())
    }

    /// Rank `rank` of `nranks` on `backend`'s device, joining the ranks that use `id`
    /// (`ncclCommInitRank`; blocks until all ranks have joined).
    ///
    /// # Errors
    /// As [`load`]; [`Error::Unsupported`] when another rank uses this device; [`Error::Cuda`].
    pub(crate) fn init_rank(
        backend: &CudaBackend,
        id: sys::ncclUniqueId,
        rank: i32,
        nranks: i32,
    ) -> Result<Comm> {
        load()?;
        // NCCL takes the device current on this thread.
        backend.enter()?;
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` is a valid slot; the caller checked `0 <= rank < nranks`.
        unsafe { nc::comm_init_rank(&mut comm, nranks, id, rank) }
            .map_err(|e| init_error("ncclCommInitRank", &e))?;
        Ok(Comm::from_raw(comm))
    }

    fn from_raw(comm: sys::ncclComm_t) -> Self {
        Self(comm, std::sync::atomic::AtomicBool::new(false))
    }

    fn aborted(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Aborts the communicator's work in flight and frees it (`ncclCommAbort`), once; every
    /// later collective on it fails.
    fn abort(&self) {
        if !self.1.swap(true, std::sync::atomic::Ordering::AcqRel) {
            // SAFETY: a live communicator, aborted once and never used by NCCL again.
            if let Err(e) = unsafe { nc::comm_abort(self.0) } {
                log::warn!(
                    "vramkit: aborting an NCCL communicator failed: {}",
                    describe(&e)
                );
            }
        }
    }

    /// Fails with the communicator's asynchronous error, if it has one (a peer that failed),
    /// or when it was aborted.
    fn check_async(&self) -> Result<()> {
        if self.aborted() {
            return Err(Error::Unsupported {
                what: "an NCCL collective on an aborted communicator".into(),
                reason: "an earlier all-reduce failed half-issued and its communicator was \
                         aborted: make a new NcclGroup or NcclRank"
                    .into(),
            });
        }
        let mut state = R::ncclSuccess;
        // SAFETY: a live communicator; writes one result.
        unsafe { sys::ncclCommGetAsyncError(self.0, &mut state) }
            .result()
            .map_err(|e| error("ncclCommGetAsyncError", &e))?;
        match state {
            R::ncclSuccess | R::ncclInProgress => Ok(()),
            other => Err(error("ncclCommGetAsyncError", &NcclError(other))),
        }
    }
}

/// A fresh `ncclGetUniqueId`, for the ranks of several processes.
///
/// # Errors
/// As [`load`]; [`Error::Cuda`].
pub(crate) fn unique_id() -> Result<sys::ncclUniqueId> {
    load()?;
    nc::get_uniqueid().map_err(|e| error("ncclGetUniqueId", &e))
}

/// What one rank of an all-reduce reduces: its backend, communicator, and `count` f32 at
/// `offset` in `block`.
pub(crate) struct Part<'a> {
    pub backend: &'a CudaBackend,
    pub comm: &'a Comm,
    pub block: &'a CudaBlock,
    pub offset: u64,
}

/// The reductions of [`all_reduce`].
pub(crate) fn op(op: crate::types::ReduceOp) -> sys::ncclRedOp_t {
    use crate::types::ReduceOp as O;
    match op {
        O::Sum => sys::ncclRedOp_t::ncclSum,
        O::Prod => sys::ncclRedOp_t::ncclProd,
        O::Max => sys::ncclRedOp_t::ncclMax,
        O::Min => sys::ncclRedOp_t::ncclMin,
        O::Avg => sys::ncclRedOp_t::ncclAvg,
    }
}

/// In-place all-reduce of `count` f32 in each part, in one NCCL group, each on its backend's
/// stream after the work recorded there so far; returns each backend's submission that covers
/// it.
///
/// # Safety
/// 1. Each part's `offset .. offset + 4 * count` lies inside its live [`MemoryKind::Device`]
///    block, and the caller records the returned submissions as the ranges' last use (so the
///    blocks are neither freed, reused nor moved before the all-reduce completes).
/// 2. No two parts' ranges overlap.
/// 3. The parts are every rank of their communicators that this process holds, and no other
///    thread issues NCCL calls on these communicators during the call.
///
/// [`MemoryKind::Device`]: crate::types::MemoryKind::Device
pub(crate) unsafe fn all_reduce(
    parts: &[Part<'_>],
    count: usize,
    reduce: sys::ncclRedOp_t,
) -> Result<Vec<QueueIndex>> {
    for p in parts {
        p.backend.check_device()?;
        p.comm.check_async()?;
    }
    nc::group_start().map_err(|e| error("ncclGroupStart", &e))?;
    let mut first = None;
    for p in parts {
        if let Err(e) = p.backend.enter() {
            first = Some(e);
            break;
        }
        let ptr = (p.block.ptr + p.offset) as *mut c_void;
        // SAFETY: the range lies inside a live device block (promise 1), used in place; the
        // stream is the backend's own, live for its life.
        let issued = unsafe {
            nc::all_reduce(
                ptr.cast_const(),
                ptr,
                count,
                sys::ncclDataType_t::ncclFloat32,
                reduce,
                p.comm.0,
                p.backend.stream.0.cast(),
            )
        };
        if let Err(e) = issued {
            first = Some(error("ncclAllReduce", &e));
            break;
        }
    }
    // The group is closed whatever happened inside it.
    let ended = nc::group_end().map_err(|e| error("ncclGroupEnd", &e));
    if let Some(e) = first.or(ended.err()) {
        // Parts issued before the failure would wait for the missing ones forever, writing
        // their buffers meanwhile: abort them, then let their streams drain.
        for p in parts {
            p.comm.abort();
        }
        parts.iter().for_each(|p| p.backend.drain());
        return Err(e);
    }
    let indices: Result<Vec<QueueIndex>> = parts
        .iter()
        .map(|p| {
            lock(&p.backend.subs).record();
            p.backend.submit()
        })
        .collect();
    if indices.is_err() {
        // The caller records no last use then: let the all-reduce finish before returning.
        parts.iter().for_each(|p| p.backend.drain());
    }
    indices
}
