//! [`ErrorKind`]: what went wrong, as a plain `Copy` value to log, count or match on cheaply.

use crate::error::Error;

/// Which [`Error`] variant an error is, without its fields: one kind per variant, same names.
///
/// ```
/// use vramkit::{AllocDesc, Context, ErrorKind};
/// let ctx = Context::host(vramkit::ContextDesc { budget: Some(8 << 20), ..Default::default() });
/// let err = ctx.alloc(AllocDesc::new("big", 64 << 20)).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::OverBudget);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// [`Error::ZeroSize`]: a zero-byte allocation or binding.
    ZeroSize,
    /// [`Error::TooLarge`]: can never fit on this device.
    TooLarge,
    /// [`Error::OutOfMemory`]: the driver has no memory now.
    OutOfMemory,
    /// [`Error::HostOutOfMemory`]: the host has no memory for a buffer.
    HostOutOfMemory,
    /// [`Error::OverBudget`]: past the context's budget.
    OverBudget,
    /// [`Error::StaleHandle`]: a released or foreign handle.
    StaleHandle,
    /// [`Error::InvalidRange`]: a byte range outside an allocation or misaligned.
    InvalidRange,
    /// [`Error::ShapeMismatch`]: shapes or sizes disagree.
    ShapeMismatch,
    /// [`Error::InvalidParameter`]: a parameter out of its range.
    InvalidParameter,
    /// [`Error::Shader`]: a shader failed to compile or validate.
    Shader,
    /// [`Error::NoAdapter`]: no usable GPU or driver.
    NoAdapter,
    /// [`Error::DeviceLost`]: the device is gone.
    DeviceLost,
    /// [`Error::Unsupported`]: the backend cannot do this.
    Unsupported,
    /// [`Error::Backend`]: the GPU API rejected an operation.
    Backend,
    /// [`Error::Internal`]: a vramkit bug.
    Internal,
    /// [`Error::MemoryGrowth`]: memory grew since a checkpoint.
    MemoryGrowth,
    /// `Error::Cuda`: the CUDA driver, NVRTC or cuBLAS failed (made only with the `cuda`
    /// feature; the kind exists in every build so that matches compile in all of them).
    Cuda,
    /// [`Error::Staging`]: no staging buffer fits for a transfer.
    Staging,
    /// [`Error::Io`]: a file or stream operation failed.
    Io,
}

impl Error {
    /// The kind of this error: which variant it is, as a `Copy` value.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::ZeroSize { .. } => ErrorKind::ZeroSize,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            Error::HostOutOfMemory { .. } => ErrorKind::HostOutOfMemory,
            Error::OverBudget { .. } => ErrorKind::OverBudget,
            Error::StaleHandle { .. } => ErrorKind::StaleHandle,
            Error::InvalidRange { .. } => ErrorKind::InvalidRange,
            Error::ShapeMismatch { .. } => ErrorKind::ShapeMismatch,
            Error::InvalidParameter { .. } => ErrorKind::InvalidParameter,
            Error::Shader { .. } => ErrorKind::Shader,
            Error::NoAdapter { .. } => ErrorKind::NoAdapter,
            Error::DeviceLost { .. } => ErrorKind::DeviceLost,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Backend { .. } => ErrorKind::Backend,
            Error::Internal { .. } => ErrorKind::Internal,
            Error::MemoryGrowth { .. } => ErrorKind::MemoryGrowth,
            #[cfg(feature = "cuda")]
            Error::Cuda { .. } => ErrorKind::Cuda,
            Error::Staging { .. } => ErrorKind::Staging,
            Error::Io { .. } => ErrorKind::Io,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}
