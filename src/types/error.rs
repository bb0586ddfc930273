//! The one error type of vramkit.
//!
//! Variants tell apart what can never work ([`Error::TooLarge`]), what does not work *now*
//! ([`Error::OutOfMemory`]) and what the user's own limit forbids ([`Error::OverBudget`]).
//! Every message says what to do next.

use crate::types::units::bytes;
use crate::types::MemoryKind;

/// Why a handle was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaleReason {
    /// The allocation was released (or the handle was released twice).
    Released,
    /// The handle was made by another [`Context`](crate::Context).
    ForeignContext,
}

/// Everything that can go wrong in vramkit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A zero-byte allocation (or kernel binding) was asked for. Zero-byte transfers are
    /// no-ops and succeed.
    #[error("`{label}`: a size of 0 bytes was requested; ask for at least 1 byte")]
    ZeroSize {
        /// Label of the allocation or operation.
        label: String,
    },

    /// The request can never fit on this device, whatever is released.
    #[error(
        "`{label}`: {requested} {unit} can never fit: the device's limit is {max} {unit} \
         ({what}); split the data into parts of at most {max} {unit}"
    )]
    TooLarge {
        /// Label of the allocation.
        label: String,
        /// How much was asked for, in `unit`s.
        requested: u64,
        /// The hard limit, in `unit`s.
        max: u64,
        /// What `requested` and `max` count: "bytes", "texels", "values".
        unit: &'static str,
        /// Which limit this is.
        what: &'static str,
    },

    /// The driver has no memory for this request right now.
    #[error(
        "the driver is out of {kind:?} memory allocating {requested} bytes ({detail}); \
         release allocations, trim the cache (`ctx.memory().trim()`; `vramkit.trim()` in Python), \
         or set a budget below the device's capacity"
    )]
    OutOfMemory {
        /// Bytes asked for (the block the pool tried to reserve).
        requested: u64,
        /// Memory kind asked for.
        kind: MemoryKind,
        /// What the driver said.
        detail: String,
    },

    /// The host (CPU) side has no memory for a buffer vramkit needed (a download's result, a
    /// frame): the allocation failed instead of aborting the process.
    #[error(
        "the host has no memory for {requested} bytes ({what}); free host memory, or move the \
         data in parts (e.g. `ctx.transfers().download_into` a smaller buffer)"
    )]
    HostOutOfMemory {
        /// Bytes asked for.
        requested: u64,
        /// What they were for.
        what: String,
    },

    /// The allocation would pass the context's budget.
    #[error(
        "allocating {requested} bytes ({}; rounded up to whole allocation units, the device's \
         offset alignment) would pass the budget of {limit} bytes ({}): {reserved} bytes are \
         reserved ({}), {in_use} in use by live allocations ({}), {} free in holes, the \
         largest free range {largest_free} bytes; at most {fits_now} bytes fit now: release \
         allocations, trim the cache (`ctx.memory().trim()`; `vramkit.trim()` in Python), ask \
         for less (a smaller batch), or raise the budget",
        bytes(*.requested), bytes(*.limit), bytes(*.reserved), bytes(*.in_use),
        .reserved.saturating_sub(*.in_use)
    )]
    OverBudget {
        /// Bytes asked for.
        requested: u64,
        /// The budget.
        limit: u64,
        /// Bytes handed out in live allocations (with alignment padding).
        in_use: u64,
        /// Bytes held in blocks and staging buffers.
        reserved: u64,
        /// The largest free range in the pool of the requested kind.
        largest_free: u64,
        /// The largest single request that would succeed now.
        fits_now: u64,
    },

    /// The handle refers to nothing live in this context.
    #[error("stale handle: {}", match .reason {
        StaleReason::Released => "the allocation was already released; keep using only live handles",
        StaleReason::ForeignContext => "the handle belongs to another context; use it with the context that made it",
    })]
    StaleHandle {
        /// Why the handle was refused.
        reason: StaleReason,
    },

    /// A byte range lies outside an allocation or breaks the copy alignment.
    #[error("`{label}`: bytes {offset}..{offset}+{len} are invalid for an allocation of {size} bytes: {reason}")]
    InvalidRange {
        /// Label of the allocation.
        label: String,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
        /// Size of the allocation.
        size: u64,
        /// What is wrong and how to fix it.
        reason: &'static str,
    },

    /// Shapes or sizes of the operands do not agree.
    #[error("shape mismatch: expected {expected}, got {actual}")]
    ShapeMismatch {
        /// What was expected.
        expected: String,
        /// What was given.
        actual: String,
    },

    /// A parameter is out of its range.
    #[error("{name} = {value} is invalid: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// The value given.
        value: String,
        /// The valid range, and what to do.
        reason: &'static str,
    },

    /// A shader failed to compile or validate.
    #[error("shader `{label}` is invalid: {message}")]
    Shader {
        /// Kernel label.
        label: String,
        /// The compiler's message.
        message: String,
    },

    /// No usable GPU adapter (or driver) was found.
    #[error("no GPU adapter: {reason}")]
    NoAdapter {
        /// What was looked for and what was found.
        reason: String,
    },

    /// The device was lost (driver reset, device destroyed); the context can not be used further.
    #[error("the GPU device was lost ({reason}); create a new context")]
    DeviceLost {
        /// What the driver said.
        reason: String,
    },

    /// The backend cannot do this.
    #[error("unsupported: {what}: {reason}")]
    Unsupported {
        /// What was asked for.
        what: String,
        /// Why it cannot be done here, and what to use instead.
        reason: String,
    },

    /// The GPU API rejected an operation. This is a bug in vramkit or in the caller's shader or
    /// bindings: please report it with the message.
    #[error("the GPU API rejected an operation: {message}")]
    Backend {
        /// The API's message.
        message: String,
    },

    /// An invariant of vramkit broke: a bug in vramkit, not in the caller's use. Please report it
    /// with the message.
    #[error("internal error, a vramkit bug (please report it): {message}")]
    Internal {
        /// What broke.
        message: String,
    },

    /// Memory allocated since a checkpoint is still alive (see
    /// [`Observe::check_no_growth`](crate::observe::Observe::check_no_growth)).
    #[error(
        "memory grew: {report}\nrelease these allocations (named by label) before the next \
         checkpoint, or take the checkpoint after the allocations meant to stay"
    )]
    MemoryGrowth {
        /// Bytes still alive.
        bytes: u64,
        /// Allocations still alive.
        allocations: usize,
        /// The growth report, by label.
        report: String,
    },

    /// The CUDA driver, NVRTC or cuBLAS rejected an operation (only with the `cuda` feature).
    #[cfg(feature = "cuda")]
    #[error("CUDA `{op}` failed with {code}: {message}")]
    Cuda {
        /// The API call.
        op: &'static str,
        /// The error code's name, e.g. `CUDA_ERROR_INVALID_VALUE`.
        code: String,
        /// The driver's description, and what to do.
        message: String,
    },

    /// The staging ring had no buffer for a transfer: the budget (or the device) has no room
    /// for one staging buffer.
    #[error(
        "the {direction} needs a staging buffer of {slot} bytes and none fits ({source}); \
         lower `ContextDesc::staging_chunk` (now {slot} bytes), leave {slot} bytes of the \
         budget free for transfers (see `Transfers::staging_capacity`), or raise the budget"
    )]
    Staging {
        /// `"upload"` or `"download"`.
        direction: &'static str,
        /// Bytes of one staging buffer (`ContextDesc::staging_chunk`, rounded).
        slot: u64,
        /// Why the buffer could not be made: [`Error::OverBudget`] or [`Error::OutOfMemory`].
        #[source]
        source: Box<Error>,
    },

    /// A file or stream operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, e.g. "reading the upload source" or "writing trace.json".
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Shorthand for results of vramkit.
pub type Result<T, E = Error> = std::result::Result<T, E>;
