//! Taking mappings out of a segment: one `cuMemUnmap` per run of adjacent mappings, then a
//! `cuMemRelease` per mapping whose memory goes back. Where the driver refuses a run, each
//! mapping of it is unmapped alone. The driver's cost is per mapping more than per call
//! (`benches/reference/vmm_probe.py` on an H100: 32 adjacent 2 MiB pages unmap in 471 µs with
//! one call, 497 µs with one each; one 64 MiB mapping in 23 µs): what saves driver time is
//! fewer pages to unmap, not fewer calls.

use cudarc::driver::result::DriverError;
use cudarc::driver::sys;

use super::segment::Mapping;

/// Unmaps `maps` (sorted by offset, of the segment at `ptr`) and releases their memory. A
/// mapping the driver would not unmap keeps its memory (it is still mapped). Returns the first
/// error.
///
/// # Safety
/// 1. Each mapping was made at `ptr + m.offset`, no unfinished work uses it, and it is unmapped
///    and released once (it was taken out of its list).
pub(super) unsafe fn release_all(
    ptr: sys::CUdeviceptr,
    maps: &[Mapping],
) -> Result<(), DriverError> {
    let mut first = Ok(());
    // SAFETY: as the caller guarantees.
    let unmapped = unsafe { unmap_all(ptr, maps) };
    for (m, u) in maps.iter().zip(unmapped) {
        // SAFETY: the handle came from cuMemCreate, is mapped nowhere now, and is released once.
        let r = u.and_then(|()| unsafe { sys::cuMemRelease(m.handle) }.result());
        if let Err(e) = r {
            first = first.and(Err(e));
        }
    }
    first
}

/// Unmaps `maps` (sorted by offset, of the segment at `ptr`), keeping their memory: one call
/// per run of adjacent mappings, one per mapping where the driver refuses the run. Returns,
/// per mapping, whether it is unmapped.
///
/// # Safety
/// 1. Each mapping was made at `ptr + m.offset`, no unfinished work uses it, and it is unmapped
///    once (it was taken out of its list).
pub(super) unsafe fn unmap_all(
    ptr: sys::CUdeviceptr,
    maps: &[Mapping],
) -> Vec<Result<(), DriverError>> {
    let mut out = Vec::with_capacity(maps.len());
    for run in maps.chunk_by(|a, b| a.offset + a.size == b.offset) {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            continue;
        };
        let size = last.offset + last.size - first.offset;
        // SAFETY: `ptr + first.offset .. + size` is exactly the run's mappings, adjacent and
        // whole (the caller's promise: no work uses them).
        let whole = unsafe { sys::cuMemUnmap(ptr + first.offset, size as usize) }.result();
        if whole.is_ok() || run.len() == 1 {
            out.extend(std::iter::repeat_n(whole, run.len()));
            continue;
        }
        for m in run {
            // SAFETY: one whole mapping of the run, still mapped (the run's call failed).
            out.push(unsafe { sys::cuMemUnmap(ptr + m.offset, m.size as usize) }.result());
        }
    }
    out
}
