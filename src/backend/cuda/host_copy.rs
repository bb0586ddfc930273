//! Copies between pageable Rust memory and pinned staging, split over the rayon pool: one core
//! copies ~8 GB/s, a PCIe 5 DMA engine moves ~50 GB/s, so a single-threaded fill would leave the
//! link idle most of the time.

use rayon::prelude::*;

/// Below this, one thread copies: fork and join would cost more than they save.
const PARALLEL_FROM: usize = 1 << 20;
/// Each task copies at least this much.
const PIECE: usize = 256 << 10;

/// Copies `src` to `dst..dst + src.len()`.
///
/// # Safety
/// `dst..dst + src.len()` must be valid for writes, not overlap `src`, and not be accessed by
/// anything else during the call.
pub(super) unsafe fn to_raw(src: &[u8], dst: *mut u8) {
    if src.len() < PARALLEL_FROM {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        return;
    }
    let piece = piece(src.len());
    let base = dst as usize;
    src.par_chunks(piece).enumerate().for_each(|(i, c)| {
        // SAFETY: piece `i` goes to its own disjoint part of the destination the caller vouched
        // for.
        unsafe {
            std::ptr::copy_nonoverlapping(c.as_ptr(), (base + i * piece) as *mut u8, c.len())
        };
    });
}

/// Copies `src..src + dst.len()` to `dst`.
///
/// # Safety
/// `src..src + dst.len()` must be valid for reads, not overlap `dst`, and not be written by
/// anything else during the call.
pub(super) unsafe fn from_raw(src: *const u8, dst: &mut [u8]) {
    if dst.len() < PARALLEL_FROM {
        // SAFETY: the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
        return;
    }
    let piece = piece(dst.len());
    let base = src as usize;
    dst.par_chunks_mut(piece).enumerate().for_each(|(i, c)| {
        // SAFETY: piece `i` comes from its own part of the source the caller vouched for.
        unsafe {
            std::ptr::copy_nonoverlapping((base + i * piece) as *const u8, c.as_mut_ptr(), c.len())
        };
    });
}

/// One piece per pool thread, at least [`PIECE`] bytes.
fn piece(len: usize) -> usize {
    len.div_ceil(rayon::current_num_threads().max(1)).max(PIECE)
}
