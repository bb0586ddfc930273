//! Host copies into and out of staging (pinned memory on CUDA, mapped buffers on wgpu), split
//! over the rayon pool: one core moves ~8-10 GB/s from pageable memory, a PCIe 5 DMA engine
//! ~50 GB/s, so a single-threaded copy would leave the link idle most of the time.
//!
//! Copies into staging use non-temporal (streaming) stores on x86-64. Staging is written once
//! and read by the DMA engine, never again by the CPU: ordinary stores first read every
//! destination line into the cache (read-for-ownership), a third stream of memory traffic on
//! top of the source's reads and the destination's writes, and they evict the caller's data.
//! `memcpy` switches to streaming stores by itself only above a size threshold of several MiB
//! per call, which the pieces of a split copy stay below.

use rayon::prelude::*;

use crate::types::error::{Error, Result};
use crate::types::write_only::WriteOnly;

/// Below this, one thread copies: fork and join would cost more than they save.
const PARALLEL_FROM: usize = 1 << 20;
/// Each task copies at least this much.
const PIECE: usize = 256 << 10;

/// The piece each rayon task copies of `len` bytes, or `None` to copy on this thread.
fn piece(len: usize) -> Option<usize> {
    (len >= PARALLEL_FROM).then(|| len.div_ceil(rayon::current_num_threads().max(1)).max(PIECE))
}

/// Copies `src` into staging (or any write-only view), split over the rayon pool, with
/// streaming stores on x86-64: what [`Context::upload`](crate::Context::upload) does with the
/// caller's bytes, for [`transfers().upload_with`](crate::transfers::Transfers::upload_with) closures that copy from
/// memory of their own.
///
/// ```
/// let ctx = vramkit::Context::host(Default::default());
/// let frame = vec![9u8; 3 << 20];
/// let h = ctx.alloc(vramkit::AllocDesc::new("frame", frame.len() as u64))?;
/// let mut copied = Ok(());
/// ctx.transfers().upload_with(h, 0..frame.len() as u64, |at, chunk| {
///     let at = at as usize;
///     if copied.is_ok() {
///         copied = vramkit::transfers::copy_to_staging(&frame[at..at + chunk.len()], chunk);
///     }
/// })?;
/// copied?;
/// assert!(ctx.download(h)? == frame);
/// # Ok::<(), vramkit::Error>(())
/// ```
///
/// # Errors
/// [`Error::ShapeMismatch`] when the lengths differ (nothing is copied).
pub fn copy_to_staging(src: &[u8], dst: WriteOnly<'_>) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::ShapeMismatch {
            expected: format!("a source of {} bytes, the chunk's length", dst.len()),
            actual: format!("{} bytes", src.len()),
        });
    }
    stream_copy(src, dst);
    Ok(())
}

/// [`copy_to_staging`] where the lengths agree by construction: copies the first
/// `min(src.len(), dst.len())` bytes.
pub(crate) fn stream_copy(src: &[u8], mut dst: WriteOnly<'_>) {
    let src = &src[..src.len().min(dst.len())];
    let base = dst.as_raw_ptr().as_ptr() as usize;
    let Some(piece) = piece(src.len()) else {
        // SAFETY: `dst` is a write-only view of at least `src.len()` bytes held exclusively
        // here.
        unsafe { stream(src, base as *mut u8) };
        return;
    };
    src.par_chunks(piece).enumerate().for_each(|(i, c)| {
        // SAFETY: piece `i` goes to its own disjoint part of `dst`, which this function holds
        // exclusively until the tasks end.
        unsafe { stream(c, (base + i * piece) as *mut u8) };
    });
}

/// `dst.copy_from_slice(src)`, split over the rayon pool for large copies (reads out of
/// staging).
///
/// # Panics
/// If the lengths differ (as `copy_from_slice`).
#[cfg(any(feature = "wgpu", feature = "cuda"))]
pub(crate) fn par_copy(src: &[u8], dst: &mut [u8]) {
    match piece(src.len()) {
        Some(piece) if src.len() == dst.len() => dst
            .par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, c)| d.copy_from_slice(c)),
        _ => dst.copy_from_slice(src),
    }
}

/// A write-only view of `len` bytes at `at`.
///
/// # Safety
/// 1. `at..at + len` is valid for writes and nothing else accesses it while the view lives.
#[cfg(feature = "cuda")]
pub(crate) unsafe fn write_only<'a>(at: *mut u8, len: usize) -> WriteOnly<'a> {
    // SAFETY: the caller's contract.
    unsafe { WriteOnly::from_raw(at, len) }
}

/// Copies `src` to `dst..dst + src.len()` with streaming stores where the CPU has them.
///
/// # Safety
/// 1. `dst..dst + src.len()` is valid for writes, does not overlap `src`, and nothing else
///    accesses it during the call.
#[cfg(target_arch = "x86_64")]
unsafe fn stream(src: &[u8], dst: *mut u8) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let len = src.len();
    if len < 4096 {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, len) };
        return;
    }
    let head = dst.align_offset(16).min(len);
    // SAFETY: the caller's contract; `head` ≤ `len`.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, head) };
    let mut at = head;
    while at + 64 <= len {
        // SAFETY: `at..at + 64` lies inside both ranges; `dst + at` is 16-aligned (`head`
        // aligned it, and `at` moves in 64s); SSE2 is part of x86-64.
        unsafe {
            let s = src.as_ptr().add(at).cast::<__m128i>();
            let d = dst.add(at).cast::<__m128i>();
            let (a, b, c, e) = (
                _mm_loadu_si128(s),
                _mm_loadu_si128(s.add(1)),
                _mm_loadu_si128(s.add(2)),
                _mm_loadu_si128(s.add(3)),
            );
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
        }
        at += 64;
    }
    // SAFETY: the tail `at..len` lies inside both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(at), dst.add(at), len - at) };
    // Streaming stores are weakly ordered: make them visible before the DMA is queued.
    // SAFETY: SSE is part of x86-64.
    unsafe { _mm_sfence() };
}

/// Copies `src` to `dst..dst + src.len()`.
///
/// # Safety
/// 1. `dst..dst + src.len()` is valid for writes, does not overlap `src`, and nothing else
///    accesses it during the call.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn stream(src: &[u8], dst: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
}

/// `bytes` zeroed host bytes, allocated fallibly.
///
/// # Errors
/// [`Error::HostOutOfMemory`](crate::Error::HostOutOfMemory) naming `what`.
pub(crate) fn host_buffer(bytes: u64, what: &str) -> crate::Result<Vec<u8>> {
    host_zeroed(bytes, what)
}

/// `bytes` of zeroed host memory as `T`s (the bytes rounded down to whole `T`s), allocated
/// fallibly and zeroed by the allocator (`alloc_zeroed`: a large buffer is fresh zero pages
/// from the OS, not a pass of stores over it, which a download would overwrite anyway).
///
/// # Errors
/// [`Error::HostOutOfMemory`](crate::Error::HostOutOfMemory) naming the bytes and `what` they
/// were for when the host cannot allocate them.
///
/// ```
/// let pixels: Vec<u16> = vramkit::transfers::host_zeroed(10, "ten bytes")?;
/// assert_eq!(pixels, [0; 5]);
/// assert!(vramkit::transfers::host_zeroed::<u8>(u64::MAX, "too much").is_err());
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn host_zeroed<T: bytemuck::Zeroable>(bytes: u64, what: &str) -> crate::Result<Vec<T>> {
    let refused = || crate::Error::HostOutOfMemory {
        requested: bytes,
        what: what.into(),
    };
    let n = usize::try_from(bytes).map_err(|_| refused())? / size_of::<T>().max(1);
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| refused())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout's size is not zero.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(refused());
    }
    // SAFETY: `p` comes from the global allocator with the layout of `[T; n]` (T's alignment,
    // n · size_of::<T>() bytes), as a Vec of capacity n holds; its bytes are all zero, a valid
    // `T` (Zeroable); length and capacity are n.
    Ok(unsafe { Vec::from_raw_parts(p.cast::<T>(), n, n) })
}
