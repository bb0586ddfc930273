//! [`ErrorKind`]: what went wrong, as a plain `Copy` value to log, count or match on cheaply.

use crate::types::error::Error;

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

#[cfg(test)]
mod tests {
    use super::ErrorKind;
    use crate::types::error::{Error, StaleReason};
    use crate::types::MemoryKind;

    /// A dense index per kind: the match is exhaustive, so a new kind must be listed here.
    fn index(k: ErrorKind) -> usize {
        use ErrorKind::*;
        match k {
            ZeroSize => 0,
            TooLarge => 1,
            OutOfMemory => 2,
            HostOutOfMemory => 3,
            OverBudget => 4,
            StaleHandle => 5,
            InvalidRange => 6,
            ShapeMismatch => 7,
            InvalidParameter => 8,
            Shader => 9,
            NoAdapter => 10,
            DeviceLost => 11,
            Unsupported => 12,
            Backend => 13,
            Internal => 14,
            MemoryGrowth => 15,
            Cuda => 16,
            Staging => 17,
            Io => 18,
        }
    }
    const KINDS: usize = 19;

    /// One error of each variant, with the kind it must have; the match on each is exhaustive,
    /// so a new variant must be constructed here.
    fn every_error() -> Vec<(Error, ErrorKind)> {
        let s = || String::from("x");
        let mut all = vec![
            (Error::ZeroSize { label: s() }, ErrorKind::ZeroSize),
            (
                Error::TooLarge {
                    label: s(),
                    requested: 2,
                    max: 1,
                    unit: "bytes",
                    what: "w",
                },
                ErrorKind::TooLarge,
            ),
            (
                Error::OutOfMemory {
                    requested: 1,
                    kind: MemoryKind::Device,
                    detail: s(),
                },
                ErrorKind::OutOfMemory,
            ),
            (
                Error::HostOutOfMemory {
                    requested: 1,
                    what: s(),
                },
                ErrorKind::HostOutOfMemory,
            ),
            (
                Error::OverBudget {
                    requested: 1,
                    limit: 1,
                    in_use: 1,
                    reserved: 1,
                    largest_free: 0,
                    fits_now: 0,
                },
                ErrorKind::OverBudget,
            ),
            (
                Error::StaleHandle {
                    reason: StaleReason::Released,
                },
                ErrorKind::StaleHandle,
            ),
            (
                Error::InvalidRange {
                    label: s(),
                    offset: 0,
                    len: 1,
                    size: 0,
                    reason: "r",
                },
                ErrorKind::InvalidRange,
            ),
            (
                Error::ShapeMismatch {
                    expected: s(),
                    actual: s(),
                },
                ErrorKind::ShapeMismatch,
            ),
            (
                Error::InvalidParameter {
                    name: "n",
                    value: s(),
                    reason: "r",
                },
                ErrorKind::InvalidParameter,
            ),
            (
                Error::Shader {
                    label: s(),
                    message: s(),
                },
                ErrorKind::Shader,
            ),
            (Error::NoAdapter { reason: s() }, ErrorKind::NoAdapter),
            (Error::DeviceLost { reason: s() }, ErrorKind::DeviceLost),
            (
                Error::Unsupported {
                    what: s(),
                    reason: s(),
                },
                ErrorKind::Unsupported,
            ),
            (Error::Backend { message: s() }, ErrorKind::Backend),
            (Error::Internal { message: s() }, ErrorKind::Internal),
            (
                Error::MemoryGrowth {
                    bytes: 1,
                    allocations: 1,
                    report: s(),
                },
                ErrorKind::MemoryGrowth,
            ),
            (
                Error::Staging {
                    direction: "upload",
                    slot: 1,
                    source: Box::new(Error::DeviceLost { reason: s() }),
                },
                ErrorKind::Staging,
            ),
            (
                Error::Io {
                    what: s(),
                    source: std::io::Error::other("e"),
                },
                ErrorKind::Io,
            ),
        ];
        // The CUDA variant exists only with the feature.
        #[cfg(feature = "cuda")]
        let cuda = Some((
            Error::Cuda {
                op: "cuInit",
                code: s(),
                message: s(),
            },
            ErrorKind::Cuda,
        ));
        #[cfg(not(feature = "cuda"))]
        let cuda = None;
        all.extend(cuda);
        for (e, _) in &all {
            // Exhaustive: a new variant fails to compile until it is constructed above.
            match e {
                Error::ZeroSize { .. }
                | Error::TooLarge { .. }
                | Error::OutOfMemory { .. }
                | Error::HostOutOfMemory { .. }
                | Error::OverBudget { .. }
                | Error::StaleHandle { .. }
                | Error::InvalidRange { .. }
                | Error::ShapeMismatch { .. }
                | Error::InvalidParameter { .. }
                | Error::Shader { .. }
                | Error::NoAdapter { .. }
                | Error::DeviceLost { .. }
                | Error::Unsupported { .. }
                | Error::Backend { .. }
                | Error::Internal { .. }
                | Error::MemoryGrowth { .. }
                | Error::Staging { .. }
                | Error::Io { .. } => {}
                #[cfg(feature = "cuda")]
                Error::Cuda { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_variant_maps_to_its_own_kind() {
        let all = every_error();
        let mut seen = [false; KINDS];
        for (e, want) in &all {
            assert_eq!(e.kind(), *want, "{e:?}");
            // The kind's name is the variant's (Debug prints the variant's name first).
            assert!(format!("{e:?}").starts_with(&format!("{want:?} ")), "{e:?}");
            assert!(!seen[index(*want)], "{want:?} twice");
            seen[index(*want)] = true;
        }
        // One variant per kind: every kind but `Cuda` (only with the feature) was seen.
        let cuda = cfg!(feature = "cuda");
        for (i, s) in seen.iter().enumerate() {
            assert!(
                *s || (i == index(ErrorKind::Cuda) && !cuda),
                "kind {i} unseen"
            );
        }
        assert_eq!(all.len(), if cuda { KINDS } else { KINDS - 1 });
    }
}
