//! Streams of work that a backend does not own: a caller's CUDA stream, on which a program
//! (PyTorch, CuPy, its own kernels) uses memory vramkit handed out.
//!
//! The memory manager orders the reuse of such memory with marks: a [`StreamMark`] recorded on
//! a stream ([`Storage::mark_stream`](super::Storage::mark_stream)) is done once the work the
//! stream held when it was recorded has finished (a CUDA event).

/// A stream of work vramkit does not own, by the API's handle: a `CUstream` / `cudaStream_t`
/// as an integer. vramkit records CUDA events on it (when memory released on it must be
/// confirmed, possibly long after the release), so making one is `unsafe`: the stream must
/// stay alive while vramkit may still do so ([`from_raw`](Self::from_raw)).
///
/// ```
/// use vramkit::backend::ForeignStream;
/// // SAFETY: the legacy default stream always exists.
/// let s = unsafe { ForeignStream::from_raw(0) };
/// assert_eq!(s, ForeignStream::DEFAULT);
/// assert_eq!(s.raw(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ForeignStream(u64);

impl ForeignStream {
    /// CUDA's legacy default stream (a null `cudaStream_t`), which always exists.
    pub const DEFAULT: ForeignStream = ForeignStream(0);
    /// CUDA's per-thread default stream (`cudaStreamPerThread`), which always exists.
    pub const PER_THREAD: ForeignStream = ForeignStream(2);

    /// A stream by its raw handle.
    ///
    /// # Safety
    /// 1. `raw` is a stream of the device of every context it is used with (a `CUstream` of
    ///    that device's primary context, or 0 / 2 for the default streams); on the host
    ///    backend, any number (its streams are a model).
    /// 2. The stream stays alive until no allocation made on it or recorded on it
    ///    ([`Interop::record_stream`](crate::interop::Interop::record_stream)) is live and the context
    ///    confirmed its releases: after [`Interop::forget_stream`](crate::interop::Interop::forget_stream)
    ///    returned for it, or the context dropped.
    pub const unsafe fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// The raw handle.
    pub const fn raw(self) -> u64 {
        self.0
    }
}

/// A point recorded on a [`ForeignStream`]: done once the work the stream held then has
/// finished. Made by a backend, which gives it back to its pool when forgotten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamMark(pub u64);

/// The stream a piece of memory is used on: vramkit's own queue, or a foreign stream.
///
/// ```
/// use vramkit::backend::{ForeignStream, StreamRef};
/// assert_ne!(StreamRef::Own, StreamRef::Foreign(ForeignStream::DEFAULT));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StreamRef {
    /// The backend's own queue (a CUDA stream of its own, the wgpu queue), where vramkit
    /// records its copies, clears and kernels.
    #[default]
    Own,
    /// A stream vramkit does not own.
    Foreign(ForeignStream),
}

impl StreamRef {
    /// The stream vramkit does not own, if this is one.
    pub fn foreign(self) -> Option<ForeignStream> {
        match self {
            Self::Foreign(s) => Some(s),
            Self::Own => None,
        }
    }
}
