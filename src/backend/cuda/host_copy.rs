//! Copies between pageable Rust memory and pinned staging: the backend-neutral, rayon-split
//! copies of [`crate::memory`] (streaming stores into staging on x86-64) over raw pointers.

/// Copies `src` to `dst..dst + src.len()`.
///
/// # Safety
/// `dst..dst + src.len()` must be valid for writes, not overlap `src`, and not be accessed by
/// anything else during the call.
pub(super) unsafe fn to_raw(src: &[u8], dst: *mut u8) {
    // SAFETY: the caller's contract.
    let view = unsafe { crate::types::host_bytes::write_only(dst, src.len()) };
    crate::types::host_bytes::stream_copy(src, view);
}

/// Copies `src..src + dst.len()` to `dst`.
///
/// # Safety
/// `src..src + dst.len()` must be valid for reads, not overlap `dst`, and not be written by
/// anything else during the call.
pub(super) unsafe fn from_raw(src: *const u8, dst: &mut [u8]) {
    // SAFETY: the caller's contract: the range is readable and nobody writes it meanwhile.
    let src = unsafe { std::slice::from_raw_parts(src, dst.len()) };
    crate::types::host_bytes::par_copy(src, dst);
}
