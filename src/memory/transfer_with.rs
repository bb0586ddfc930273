//! Transfers whose bytes a caller's closure produces or consumes in place, in the staging
//! slots themselves: pinned memory on CUDA, mapped buffers on wgpu. No copy between the caller's
//! memory and staging, so an upload runs at the speed the caller fills (and the DMA moves) it.
//!
//! The ring and its pipelining are [`transfer`](super::transfer)'s: chunk `i + 1` is filled
//! while the device copies chunk `i`; a slot is reused only after its copy completed.
//!
//! # When the closure panics
//! The panic propagates to the caller. Chunks before the panicking one were written (upload)
//! or seen (download); the rest of the range keeps its old bytes. The ring stays consistent:
//! the slot being filled was not submitted and is reused by the next transfer; no staging
//! leaks (the slots stay in the ring, counted in the budget).

use std::ops::Range;

use super::staging::Staging;
use super::transfer::{copy_into_slot, pipelined_readback, slot_pieces, Transfer, Way, WORD};
use super::BufferHandle;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::write_only::WriteOnly;

/// A caller's filler: the chunk's offset from the range's start, and the chunk to fill.
pub(crate) type Fill<'f> = &'f mut dyn FnMut(u64, WriteOnly<'_>);
/// A caller's reader: the chunk's offset from the range's start, and the chunk's bytes.
pub(crate) type View<'f> = &'f mut dyn FnMut(u64, &[u8]);

impl<B: Storage> Transfer<'_, B> {
    /// Checks `range` of the allocation; returns its length and whether the staged path (in
    /// place, word-aligned) serves it.
    fn plan(&self, h: BufferHandle, range: &Range<u64>, up: bool) -> Result<(usize, bool)> {
        let way = if up { Way::Up } else { Way::Down };
        let start = range.start.min(range.end);
        let meta = super::transfer::meta(self.backend, self.mem, h, start, 0, way)?;
        if range.start > range.end {
            return Err(Error::InvalidRange {
                label: meta.label,
                offset: range.start,
                len: 0,
                size: meta.size,
                reason: "the range ends before it starts; pass start..end with start <= end",
            });
        }
        let len = usize::try_from(range.end - range.start).map_err(|_| Error::InvalidRange {
            label: meta.label.clone(),
            offset: range.start,
            len: range.end - range.start,
            size: meta.size,
            reason: "the range is longer than host memory can address",
        })?;
        let meta = super::transfer::meta(self.backend, self.mem, h, range.start, len, way)?;
        let tail_ok = !up || range.end.is_multiple_of(WORD) || range.end == meta.size;
        let staged = !meta.host_visible && range.start.is_multiple_of(WORD) && tail_ok;
        Ok((len, staged))
    }

    /// Lets `f` write `range` of the allocation chunk by chunk, in place in staging.
    pub fn upload_with(&mut self, h: BufferHandle, range: Range<u64>, f: Fill<'_>) -> Result<()> {
        self.fill_with(h, range.clone(), f)?;
        self.uploaded(h, range.start, range.end.saturating_sub(range.start));
        Ok(())
    }

    fn fill_with(&mut self, h: BufferHandle, range: Range<u64>, f: Fill<'_>) -> Result<()> {
        let (len, staged) = self.plan(h, &range, true)?;
        if len == 0 {
            return Ok(());
        }
        if !staged {
            // Host-visible memory or an unaligned end: a temporary per chunk, then `upload`
            // (which keeps the bytes around the range).
            let chunk = self.staging.upload.slot_size as usize;
            let mut tmp =
                crate::types::host_bytes::host_buffer(chunk.min(len) as u64, "an upload chunk")?;
            for at in (0..len).step_by(chunk) {
                let piece = &mut tmp[..chunk.min(len - at)];
                f(at as u64, WriteOnly::from_mut(&mut *piece));
                self.upload(h, range.start + at as u64, piece)?;
            }
            return Ok(());
        }
        let backend = self.backend;
        self.stream_up(h, range.start, len, &mut |slot, at, n| {
            let padded = (n as u64).next_multiple_of(WORD) as usize;
            // SAFETY: `stream_up` hands a slot of at least `padded` bytes (a whole number of
            // words no larger than the slot) whose last copy has finished.
            unsafe {
                backend.fill_host(slot, 0, padded, &mut |buf| {
                    let (chunk, mut pad) = buf.split_at(n);
                    pad.fill(0);
                    f(at as u64, chunk);
                })
            }
        })
    }

    /// Hands `range` of the allocation to `f` chunk by chunk, in place in staging, in order.
    pub fn download_with(&mut self, h: BufferHandle, range: Range<u64>, f: View<'_>) -> Result<()> {
        let (len, staged) = self.plan(h, &range, false)?;
        if len == 0 {
            return Ok(());
        }
        let slot_size = self.staging.readback.slot_size as usize;
        if !staged {
            let mut tmp = crate::types::host_bytes::host_buffer(
                slot_size.min(len) as u64,
                "a download chunk",
            )?;
            for at in (0..len).step_by(slot_size) {
                let piece = &mut tmp[..slot_size.min(len - at)];
                self.download(h, range.start + at as u64, piece)?;
                f(at as u64, piece);
            }
            return Ok(());
        }
        let (backend, mem, offset) = (self.backend, self.mem, range.start);
        let Staging {
            readback: ring,
            upload: spare,
        } = &mut *self.staging;
        pipelined_readback(
            backend,
            mem,
            ring,
            spare,
            slot_pieces(len, slot_size),
            |slot, piece| copy_into_slot(backend, mem, h, offset, slot, piece),
            // SAFETY: the slot holds at least the piece's length and its copy has finished.
            |slot, piece| unsafe {
                backend.view_host(slot, 0, piece.len(), &mut |b| f(piece.start as u64, b))
            },
        )
    }
}
