//! Device-to-device copies of a [`DeviceSet`](super::DeviceSet): within one context, the
//! backend's own [`Storage::copy`](crate::backend::Storage::copy); between two contexts, where
//! the backend has a direct path ([`Storage::copy_to_peer`](crate::backend::Storage::copy_to_peer):
//! one CUDA device, CUDA peers, one wgpu device shared by two contexts). Either way the ranges
//! must suit it: both allocations [`MemoryKind::Device`], offsets in their blocks multiples of
//! the offset alignment and a length of whole copy units (whole allocations always are).
//! Anything else goes through the host (`copy.rs`).
//!
//! Both contexts' memory managers are locked for the call, always in the same order (by
//! address), so copies in opposite directions cannot wait for each other; the ranges are
//! validated there ([`Manager::resolve`](crate::memory::manager::Manager::resolve)) and the
//! copy's submissions recorded as each allocation's last use, so neither is reused, moved or
//! freed before the copy completed.
//!
//! The price of that order: it is per stream, not per allocation. The source device's later
//! work all waits for the copy (the manager reuses and moves memory in stream order, and does
//! not know which bindings a kernel writes), so a device cannot compute while copies out of it
//! run: on two H200s this keeps an 8192³ `split_matmul` at 1.75× one GPU where overlapping
//! would give about 1.85×. Lifting it means ordering per allocation, as PyTorch's
//! `record_stream` does: a copy's source blocks kept from reuse until its event completed, and
//! only later writes, reuses and moves of those ranges made to wait for it; with kernels that
//! declare which bindings they write, and a `copy_to_peer` in two steps (issue, then order the
//! source) so the source's own work can be recorded in between.

use crate::backend::Backend;
use crate::memory::manager::Access;
use crate::types::error::Result;
use crate::types::MemoryKind;
use crate::{BufferHandle, Context};

/// Copies `len` bytes at `src_offset` of `src` (of `from`) to `dst_offset` of `dst` (of `to`)
/// device to device; `Ok(false)` when there is no direct path for them. The caller has checked
/// both ranges against the allocations and that ranges of one allocation do not overlap.
pub(super) fn copy<B: Backend>(
    from: &Context<B>,
    src: (BufferHandle, u64),
    to: &Context<B>,
    dst: (BufferHandle, u64),
    len: u64,
) -> Result<bool> {
    let (fb, tb) = (from.backend(), to.backend());
    let unit = fb.limits().copy_alignment.max(tb.limits().copy_alignment);
    let align = fb
        .limits()
        .offset_alignment
        .max(tb.limits().offset_alignment);
    // Allocations start at multiples of the alignment: starts off it never suit, and would
    // not pass `resolve`'s word check.
    if len == 0
        || !len.is_multiple_of(unit)
        || !src.1.is_multiple_of(align)
        || !dst.1.is_multiple_of(align)
    {
        return Ok(false);
    }
    let one = std::ptr::eq(from, to);
    // Lock order: by address; one context, one lock.
    let (first, second) = if std::ptr::from_ref(from) <= std::ptr::from_ref(to) {
        (from, to)
    } else {
        (to, from)
    };
    let mut first_guard = first.manager();
    let mut second_guard = (!one).then(|| second.manager());
    let (fm, tm) = match &mut second_guard {
        None => (&mut *first_guard, None),
        Some(g) if std::ptr::eq(first, from) => (&mut *first_guard, Some(&mut **g)),
        Some(g) => (&mut **g, Some(&mut *first_guard)),
    };
    let done = {
        let s = fm.resolve(src.0, src.1, Some(len), Access::Words, fb.limits())?;
        let d = match &tm {
            Some(tm) => tm.resolve(dst.0, dst.1, Some(len), Access::Words, tb.limits())?,
            None => fm.resolve(dst.0, dst.1, Some(len), Access::Words, tb.limits())?,
        };
        let suits = |kind, at: u64| kind == MemoryKind::Device && at.is_multiple_of(align);
        if !suits(s.kind, s.offset) || !suits(d.kind, d.offset) {
            return Ok(false);
        }
        if one {
            // SAFETY: `resolve` placed both ranges inside live blocks of this backend; the
            // caller refused overlapping ranges of one allocation, and allocations never share
            // bytes; offsets are multiples of the offset alignment (so of the copy unit, as a
            // copy within one block needs) and `len` of the copy unit (checked above); the
            // submission is recorded below as both allocations' last use.
            let index = unsafe { fb.copy(s.block, s.offset, d.block, d.offset, len)? };
            Some((index, index))
        } else {
            // SAFETY: `resolve` placed both ranges inside live Device blocks of their two
            // backends; the offsets are multiples of both offset alignments and `len` of both
            // copy units (checked above); the submissions returned are recorded below as both
            // allocations' last use, so blocks are freed only once the copy completed, and the
            // backend orders each side's later work (a reuse, a move) after the copy (what
            // `copy_to_peer` promises in return).
            unsafe { fb.copy_to_peer(s.block, s.offset, tb, d.block, d.offset, len)? }
        }
    };
    let Some((s_index, d_index)) = done else {
        return Ok(false);
    };
    // Record the uses, each in its own context's manager.
    fm.touch(src.0, s_index);
    tm.unwrap_or(fm).touch(dst.0, d_index);
    Ok(true)
}
