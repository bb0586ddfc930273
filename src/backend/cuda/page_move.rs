//! Moving physical pages inside and between segments: the pages behind a free range are
//! unmapped there and mapped, the same physical memory, where a request needs them
//! (one `cuMemUnmap` for the range, a `cuMemMap` of the same handle per page, one
//! `cuMemSetAccess`). Memory held stays the
//! same; the `cuMemRelease` and `cuMemCreate` of giving pages back and mapping new ones are
//! saved. With the unmapping thread ([`CudaConfig::background_unmap`]) the pages are first
//! mapped at the destination, their old mappings kept (the driver lets one allocation be
//! mapped at two addresses), and the old mappings go to the thread: the move costs the new
//! mappings, their access and the wait for vramkit's own stream (work recorded there, such as
//! a growth's clear, may still write the pages), and no unmapping. A move of pages that a
//! foreign stream's work may still use, to that stream's next request
//! ([`Storage::move_pages_after`]), costs no wait at all: the thread unmaps the old mappings
//! once an event recorded on that stream passed.
//!
//! [`Storage::move_pages_after`]: crate::backend::Storage::move_pages_after
//! [`CudaConfig::background_unmap`]: super::CudaConfig::background_unmap

use cudarc::driver::sys;

use super::segment::{Mapping, Segment};
use super::unmap::{release_all, unmap_all};
use super::unmapper::{StreamPoint, Unmapper};
use super::{CudaBackend, CudaBlock};
use crate::backend::ForeignStream;
use crate::types::error::{Error, Result};
use crate::types::lock;

impl CudaBackend {
    /// Moves the pages behind `from .. from + size` of `src` to `to .. to + size` of `dst`.
    ///
    /// # Safety
    /// As [`Storage::move_pages`](crate::backend::Storage::move_pages): whole pages, the
    /// source mapped and used by no unfinished work, the destination unmapped.
    ///
    /// # Errors
    /// [`Error::Internal`], with nothing changed, where the ranges are not as promised (checked
    /// before any driver call); else the driver's, the destination unmapped and the source's
    /// pages given back (released).
    pub(super) unsafe fn move_segment_pages(
        &self,
        src: &CudaBlock,
        from: u64,
        dst: &CudaBlock,
        to: u64,
        size: u64,
    ) -> Result<()> {
        let (d, taken) = self.take_source(src, dst, Span { from, to, size })?;
        // Out of the source's list: from here on, each page is mapped at the destination or
        // released, once.
        if let Err(e) = self.enter().and_then(|()| self.sync_before_unmap()) {
            // SAFETY: still mapped at the source, used by nothing (the caller's promise),
            // released once.
            if let Err(e) = unsafe { release_all(src.ptr, &taken) } {
                self.record_err("cuMemUnmap", e);
            }
            return Err(e);
        }
        if let Some(u) = &self.unmapper {
            // SAFETY: as this function's; the stream is idle.
            let at = Span { from, to, size };
            return unsafe { self.alias_pages(u, (src, dst, d), taken, at, None) };
        }
        // SAFETY: mapped pages of the source, adjacent (whole pages of one range), used by no
        // unfinished work (the caller's promise) and out of its list; the stream is idle.
        let unmapped = unsafe { unmap_all(src.ptr, &taken) };
        if let Some(e) = unmapped.iter().find_map(|r| r.err()) {
            for m in &taken {
                // SAFETY: released once; memory still mapped goes with its mapping.
                let _ = unsafe { sys::cuMemRelease(m.handle) };
            }
            return Err(self.fail("cuMemUnmap", e));
        }
        // SAFETY: the handles are unmapped from the source; the destination is unmapped.
        let (placed, failed) = unsafe { self.map_handles(&taken, dst, from, to, size) };
        let Some(e) = failed else {
            lock(&d.mappings).extend(placed.into_iter().map(|m| (m.offset, m)));
            return Ok(());
        };
        // The destination stays unmapped and the source holds no memory.
        // SAFETY: mapped just now at the destination, used by nothing, released once.
        if let Err(e) = unsafe { release_all(dst.ptr, &placed) } {
            self.record_err("cuMemUnmap", e);
        }
        for m in &taken[placed.len()..] {
            // SAFETY: unmapped from the source above and mapped nowhere; released once.
            if let Err(e) = unsafe { sys::cuMemRelease(m.handle) }.result() {
                self.record_err("cuMemRelease", e);
            }
        }
        Err(e)
    }

    /// [`move_segment_pages`](Self::move_segment_pages) for a source that work recorded on
    /// `stream` so far may still use: with the unmapping thread the pages are mapped at the
    /// destination now, and the source's mappings go to the thread with an event recorded on
    /// `stream`, which it waits for before unmapping them; without it, the host waits for
    /// `stream` first.
    ///
    /// # Safety
    /// As [`Storage::move_pages_after`](crate::backend::Storage::move_pages_after).
    ///
    /// # Errors
    /// As [`move_segment_pages`](Self::move_segment_pages); [`Error::Internal`], with nothing
    /// changed, where the stream is being captured into a graph or its point cannot be
    /// recorded or waited for.
    pub(super) unsafe fn move_segment_pages_after(
        &self,
        src: &CudaBlock,
        (from, dst, to): (u64, &CudaBlock, u64),
        size: u64,
        stream: ForeignStream,
    ) -> Result<()> {
        let unchanged = |what: &str, e: Error| Error::Internal {
            message: format!("{what} on the stream before moving pages: {e}"),
        };
        let Some(u) = &self.unmapper else {
            let mark = self
                .record_mark(stream)
                .map_err(|e| unchanged("no mark", e))?;
            let waited = self.sync_mark(mark);
            self.drop_mark(mark);
            waited.map_err(|e| unchanged("no wait", e))?;
            // SAFETY: the stream's work on the source is done; the rest is the caller's.
            return unsafe { self.move_segment_pages(src, from, dst, to, size) };
        };
        // The stream's point first: nothing has changed if it cannot be recorded. An event
        // recorded on a stream being captured into a graph is not one the thread can wait for.
        self.enter().map_err(|e| unchanged("no context", e))?;
        let mut capture = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: the stream is a live stream of the current context or a default one
        // (`ForeignStream::from_raw`); `capture` outlives the call.
        unsafe { sys::cuStreamIsCapturing(stream.raw() as sys::CUstream, &mut capture) }
            .result()
            .map_err(|e| unchanged("no capture status", self.fail("cuStreamIsCapturing", e)))?;
        if capture != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::Internal {
                message:
                    "the stream is being captured into a graph: its pages do not move behind it"
                        .into(),
            });
        }
        // SAFETY: the backend's context is current (above); the stream is a live stream of
        // its device's primary context or a default one (`ForeignStream::from_raw`).
        let point = unsafe { StreamPoint::record(stream.raw() as sys::CUstream) }
            .map_err(|e| unchanged("no event", self.fail("cuEventRecord", e)))?;
        let at = Span { from, to, size };
        let (d, taken) = self.take_source(src, dst, at)?;
        if let Err(e) = self.sync_before_unmap() {
            // SAFETY: out of the source's list; used by no work but the stream's before its
            // point (the caller's promise), which the thread waits for; given back once.
            let errors = unsafe { u.push(src.ptr, taken, true, Some(point)) };
            self.report_unmaps(errors);
            return Err(e);
        }
        // SAFETY: as this function's; vramkit's stream is idle; the source's old mappings go
        // after the stream's point.
        unsafe { self.alias_pages(u, (src, dst, d), taken, at, Some(point)) }
    }

    /// Checks a move of `from .. from + size` of `src` to `to ..` of `dst` (whole mapped
    /// pages to a given-back place, each inside one page there) and takes the source's
    /// mappings out of its list; returns the destination's segment and them.
    ///
    /// # Errors
    /// [`Error::Internal`], with nothing changed, where the ranges are not as promised.
    fn take_source<'a>(
        &self,
        src: &CudaBlock,
        dst: &'a CudaBlock,
        Span { from, to, size }: Span,
    ) -> Result<(&'a Segment, Vec<Mapping>)> {
        let (Some(s), Some(d)) = (&src.segment, &dst.segment) else {
            return Err(Error::Internal {
                message: "moving pages of a block that is not a segment".into(),
            });
        };
        let end = to + size;
        if lock(&d.mappings)
            .range(..end)
            .next_back()
            .is_some_and(|(_, m)| m.offset + m.size > to)
        {
            return Err(Error::Internal {
                message: format!("moving pages to {to}..{end}, which holds mapped pages"),
            });
        }
        let taken: Vec<Mapping> = {
            let mut m = lock(&s.mappings);
            let whole = m.get(&from).is_some()
                && m.range(from..from + size).map(|(_, p)| p.size).sum::<u64>() == size
                && m.range(from..from + size)
                    .all(|(_, p)| p.offset + p.size <= from + size);
            if !whole {
                return Err(Error::Internal {
                    message: format!(
                        "moving pages from {from}..{}, which is not whole mapped pages",
                        from + size
                    ),
                });
            }
            // A page lands where the grid has a page of its size, or inside a larger one.
            let grid = self.vmm.as_ref().map(|v| v.grid);
            let fits = m.range(from..from + size).all(|(_, p)| {
                let at = to + (p.offset - from);
                grid.is_some_and(|g| {
                    at.is_multiple_of(g.base()) && g.page_at(at).end >= at + p.size
                })
            });
            if !fits {
                return Err(Error::Internal {
                    message: format!(
                        "moving pages from {from}..{} to {to}, where a page would lie across two",
                        from + size
                    ),
                });
            }
            let keys: Vec<u64> = m.range(from..from + size).map(|(&k, _)| k).collect();
            keys.iter().filter_map(|k| m.remove(k)).collect()
        };
        Ok((d, taken))
    }

    /// Maps the handles of `taken` (the source's mappings of `from .. from + size`) at
    /// `to ..` of `dst`, then gives the range the segment's access. Returns the mappings made
    /// and, where one failed, the error (the mappings from `placed.len()` on are not made).
    ///
    /// # Safety
    /// 1. The destination range is unmapped, with nothing queued for the unmapping thread, and
    ///    each of `taken` lands inside one page there.
    unsafe fn map_handles(
        &self,
        taken: &[Mapping],
        dst: &CudaBlock,
        from: u64,
        to: u64,
        size: u64,
    ) -> (Vec<Mapping>, Option<Error>) {
        let mut placed: Vec<Mapping> = Vec::with_capacity(taken.len());
        for m in taken {
            let at = to + (m.offset - from);
            // SAFETY: `dst.ptr + at .. + m.size` lies in the destination's reservation and is
            // unmapped (the caller's promise); the handle holds `m.size` bytes.
            if let Err(e) =
                unsafe { sys::cuMemMap(dst.ptr + at, m.size as usize, 0, m.handle, 0) }.result()
            {
                let e = self.refused("cuMemMap", e, m.size, crate::MemoryKind::Device);
                return (placed, Some(e));
            }
            placed.push(Mapping {
                handle: m.handle,
                offset: at,
                size: m.size,
            });
        }
        let peers = dst
            .segment
            .as_ref()
            .map(|d| lock(&d.peers).clone())
            .unwrap_or_default();
        let failed = self.set_access(dst.ptr + to, size, &peers).err();
        (placed, failed)
    }

    /// A move with the unmapping thread: each page's memory is mapped at the destination while
    /// its old mapping stays (one allocation may be mapped at two addresses), and the old
    /// mappings are queued for the thread, so that the move costs the new mappings (and the
    /// wait for vramkit's own stream before it) but no unmapping; with `after`, the thread
    /// unmaps them once that point of a foreign stream passed. On failure the destination is
    /// unmapped again and the source's pages are given back (after `after` too).
    ///
    /// # Safety
    /// 1. `taken` are the source's mappings of `from .. from + size`, out of its list, used by
    ///    no unfinished work but, with `after`, that stream's before the point (and the
    ///    destination by none but its work after the point); the destination range is
    ///    unmapped; vramkit's stream is idle.
    unsafe fn alias_pages(
        &self,
        u: &Unmapper,
        (src, dst, d): (&CudaBlock, &CudaBlock, &Segment),
        taken: Vec<Mapping>,
        Span { from, to, size }: Span,
        after: Option<StreamPoint>,
    ) -> Result<()> {
        // Pages given back at the destination may still wait for the thread.
        self.before_map(dst.ptr + to..dst.ptr + to + size);
        // SAFETY: the destination is unmapped with nothing queued there (waited for above);
        // each handle may be mapped a second time while its source mapping stays.
        let (placed, failed) = unsafe { self.map_handles(&taken, dst, from, to, size) };
        let Some(e) = failed else {
            lock(&d.mappings).extend(placed.into_iter().map(|m| (m.offset, m)));
            // SAFETY: the old mappings, used by nothing but, with `after`, the stream's work
            // before its point, which the thread waits for (the caller's promise), out of the
            // source's list; the memory stays with the new ones (not released); every later
            // mapping there waits for them.
            let errors = unsafe { u.push(src.ptr, taken, false, after) };
            self.report_unmaps(errors);
            return Ok(());
        };
        // SAFETY: mapped just now at the destination, used by nothing; their memory stays
        // with the source's mappings, released below.
        for r in unsafe { unmap_all(dst.ptr, &placed) } {
            if let Err(e) = r {
                self.record_err("cuMemUnmap", e);
            }
        }
        // SAFETY: the source's mappings, used by nothing but, with `after`, the stream's work
        // before its point, which the thread waits for; out of its list: given back once.
        let errors = unsafe { u.push(src.ptr, taken, true, after) };
        self.report_unmaps(errors);
        Err(e)
    }
}

/// Where a move's pages come from and go to, in their segments, and how many bytes.
#[derive(Clone, Copy)]
struct Span {
    from: u64,
    to: u64,
    size: u64,
}
