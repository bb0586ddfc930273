//! Streams of work that a backend does not own: a caller's CUDA stream, on which a program
//! (PyTorch, CuPy, its own kernels) uses memory vramkit handed out.
//!
//! The memory manager orders the reuse of such memory with marks: a [`StreamMark`] recorded on
//! a stream ([`Storage::mark_stream`](super::Storage::mark_stream)) is done once the work the
//! stream held when it was recorded has finished (a CUDA event).

/// A stream of work vramkit does not own, by the API's handle: a `CUstream` / `cudaStream_t`
/// as an integer (0 is CUDA's legacy default stream, 2 its per-thread default stream).
///
/// ```
/// let s = vramkit::backend::ForeignStream(0);
/// assert_eq!(s, vramkit::backend::ForeignStream::DEFAULT);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ForeignStream(pub u64);

impl ForeignStream {
    /// CUDA's legacy default stream (a null `cudaStream_t`).
    pub const DEFAULT: ForeignStream = ForeignStream(0);
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
