//! Uploads and readbacks: direct for host-visible memory, through the staging ring otherwise.
//!
//! Copies on the device move whole 4-byte words. A transfer whose ends are not word-aligned reads
//! the partial words first (read-modify-write), so no byte outside the range changes.

use std::collections::VecDeque;
use std::ops::Range;

use super::access::SharedManager;
use super::manager::Access;
use super::staging::{Ring, Staging};
use super::BufferHandle;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::QueueIndex;

pub(super) const WORD: u64 = 4;

/// Writes a chunk into a staging slot: the slot, the chunk's start in the transfer, its length.
pub(super) type FillSlot<'f, Blk> = &'f mut dyn FnMut(&Blk, usize, usize) -> Result<()>;

/// The parts of a context a transfer uses.
pub(crate) struct Transfer<'a, B: Storage> {
    pub backend: &'a B,
    pub mem: &'a SharedManager<B>,
    pub staging: &'a mut Staging<B::Block>,
}

pub(super) struct Meta {
    pub size: u64,
    pub host_visible: bool,
    pub label: String,
}

/// Which way a transfer moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Way {
    Up,
    Down,
}

/// Checks `len` bytes at `offset` of the allocation (see [`Manager::resolve`]); a download of
/// an allocation whose last work the device refused fails (see `manager/lost.rs`).
pub(super) fn meta<B: Storage>(
    backend: &B,
    mem: &SharedManager<B>,
    h: BufferHandle,
    offset: u64,
    len: usize,
    way: Way,
) -> Result<Meta> {
    let mut m = mem.lock();
    m.note_refusals(backend);
    let r = m.resolve(h, offset, Some(len as u64), Access::Bytes, backend.limits())?;
    let kind = r.kind;
    if way == Way::Down {
        m.check_intact(h)?;
    }
    let a = m.get(h)?;
    Ok(Meta {
        size: a.requested,
        host_visible: kind.host_visible(),
        label: a.label.to_string(),
    })
}

impl<B: Storage> Transfer<'_, B> {
    /// Once an upload of `len` bytes at `offset` went through: if it covered the whole
    /// allocation, its contents are known again (see `manager/lost.rs`).
    pub(super) fn uploaded(&self, h: BufferHandle, offset: u64, len: u64) {
        let mut m = self.mem.lock();
        if offset == 0 && m.get(h).is_ok_and(|a| len >= a.requested) {
            m.rewritten(h);
        }
    }

    /// Writes `data` at `offset` of the allocation.
    pub fn upload(&mut self, h: BufferHandle, offset: u64, data: &[u8]) -> Result<()> {
        self.upload_bytes(h, offset, data)?;
        self.uploaded(h, offset, data.len() as u64);
        Ok(())
    }

    fn upload_bytes(&mut self, h: BufferHandle, offset: u64, data: &[u8]) -> Result<()> {
        let meta = meta(self.backend, self.mem, h, offset, data.len(), Way::Up)?;
        if data.is_empty() {
            return Ok(());
        }
        if meta.host_visible {
            return self.direct(h, offset, data.len(), |b, raw, at| {
                // SAFETY: `direct` resolved the range inside the block and waited for the
                // work that uses it.
                unsafe { b.write_host(raw, at, data) }
            });
        }
        let end = offset + data.len() as u64;
        let start = offset / WORD * WORD;
        // Bytes past `size` up to the next word are padding: they may be overwritten.
        let tail_ok = end.is_multiple_of(WORD) || end == meta.size;
        if start == offset && tail_ok {
            return self.staged_upload(h, offset, data);
        }
        let stop = end.next_multiple_of(WORD);
        let mut window = vec![0u8; (stop - start) as usize];
        let head = (offset - start) as usize;
        if head != 0 {
            self.staged_download(h, start, &mut window[..WORD as usize])?;
        }
        if !tail_ok {
            let last = window.len() - WORD as usize;
            self.staged_download(h, stop - WORD, &mut window[last..])?;
        }
        window[head..head + data.len()].copy_from_slice(data);
        self.staged_upload(h, start, &window)
    }

    /// Reads `out.len()` bytes at `offset` of the allocation.
    pub fn download(&mut self, h: BufferHandle, offset: u64, out: &mut [u8]) -> Result<()> {
        let meta = meta(self.backend, self.mem, h, offset, out.len(), Way::Down)?;
        if out.is_empty() {
            return Ok(());
        }
        if meta.host_visible {
            return self.direct(h, offset, out.len(), |b, raw, at| {
                // SAFETY: `direct` resolved the range inside the block and waited for the
                // work that uses it.
                unsafe { b.read_host(raw, at, out) }
            });
        }
        let start = offset / WORD * WORD;
        if start == offset {
            return self.staged_download(h, offset, out);
        }
        let head = (offset - start) as usize;
        let mut window = vec![0u8; head + out.len()];
        self.staged_download(h, start, &mut window)?;
        out.copy_from_slice(&window[head..]);
        Ok(())
    }

    /// Host access to `len` bytes at `offset` of host-visible memory, after the device is
    /// done with them: `f` gets the block and the range's start in it.
    fn direct(
        &self,
        h: BufferHandle,
        offset: u64,
        len: usize,
        f: impl FnOnce(&B, &B::Block, u64) -> Result<()>,
    ) -> Result<()> {
        let m = self.mem.lock();
        let r = m.resolve(
            h,
            offset,
            Some(len as u64),
            Access::Bytes,
            self.backend.limits(),
        )?;
        if r.last_use != 0 {
            self.backend.wait(r.last_use)?;
        }
        f(self.backend, r.block, r.offset)
    }

    /// Upload of a word-aligned start; the end is word-aligned or the allocation's end.
    fn staged_upload(&mut self, h: BufferHandle, offset: u64, data: &[u8]) -> Result<()> {
        let backend = self.backend;
        self.stream_up(h, offset, data.len(), &mut |slot, at, n| {
            let chunk = &data[at..at + n];
            let pad = ((n as u64).next_multiple_of(WORD) - n as u64) as usize;
            // SAFETY: `stream_up` hands a slot of at least `n` rounded up to a word (the slot is
            // a whole number of words) whose last copy has finished.
            unsafe {
                backend.write_host(slot, 0, chunk)?;
                if pad != 0 {
                    backend.write_host(slot, n as u64, &[0; WORD as usize][..pad])?;
                }
            }
            Ok(())
        })
    }

    /// Streams `len` bytes to `offset` (word-aligned; the end word-aligned or the allocation's
    /// end) through the upload ring: for each slot-sized chunk, `fill(slot, at, n)` writes the
    /// chunk's `n` bytes (from `at` of the transfer) and its padding to the next word at the
    /// slot's start; then the copy is recorded and submitted, and the next chunk is filled
    /// while the device copies this one.
    pub(super) fn stream_up(
        &mut self,
        h: BufferHandle,
        offset: u64,
        len: usize,
        fill: FillSlot<'_, B::Block>,
    ) -> Result<()> {
        let Staging {
            upload: ring,
            readback: spare,
        } = &mut *self.staging;
        let slot_size = ring.slot_size as usize;
        for at in (0..len).step_by(slot_size) {
            let n = slot_size.min(len - at);
            let s = ring.acquire(self.backend, self.mem, spare)?;
            let block = &ring.slots[s].block;
            fill(block, at, n)?;
            let words = (n as u64).next_multiple_of(WORD);
            let dst = offset + at as u64;
            let index = {
                let mut m = self.mem.lock();
                let r = m.resolve(h, dst, Some(words), Access::Words, self.backend.limits())?;
                // SAFETY: the destination was resolved inside its block, word-aligned; the
                // source is the slot's first `words` bytes; a staging slot is its own block.
                let index = unsafe { self.backend.copy(block, 0, r.block, r.offset, words)? };
                m.touch(h, index);
                index
            };
            ring.slots[s].in_flight = index;
            self.backend.submit()?;
        }
        Ok(())
    }

    /// Download of a word-aligned start, pipelined over the ring's slots.
    fn staged_download(&mut self, h: BufferHandle, offset: u64, out: &mut [u8]) -> Result<()> {
        let backend = self.backend;
        let mem = self.mem;
        let Staging {
            readback: ring,
            upload: spare,
        } = &mut *self.staging;
        let slot_size = ring.slot_size as usize;
        pipelined_readback(
            backend,
            mem,
            ring,
            spare,
            slot_pieces(out.len(), slot_size),
            |slot, piece| copy_into_slot(backend, mem, h, offset, slot, piece),
            // SAFETY: the slot holds `slot_size` bytes, at least the piece's length, and its
            // copy has finished.
            |slot, piece| unsafe { backend.read_host(slot, 0, &mut out[piece]) },
        )
    }

    /// Streams `reader` into the allocation from offset 0; returns the bytes written.
    pub fn upload_from_reader(
        &mut self,
        h: BufferHandle,
        reader: &mut dyn std::io::Read,
    ) -> Result<u64> {
        let meta = meta(self.backend, self.mem, h, 0, 0, Way::Up)?;
        let mut chunk = vec![0u8; self.staging.upload.slot_size.min(meta.size) as usize];
        let mut total = 0u64;
        loop {
            let n = read_full(reader, &mut chunk).map_err(|source| Error::Io {
                what: "reading the upload source".into(),
                source,
            })?;
            if n == 0 {
                return Ok(total);
            }
            if total + n as u64 > meta.size {
                let fit = (meta.size - total) as usize;
                if fit > 0 {
                    self.upload(h, total, &chunk[..fit])?;
                }
                return Err(Error::InvalidRange {
                    label: meta.label,
                    offset: total,
                    len: n as u64,
                    size: meta.size,
                    reason: "the input is longer than the allocation (the bytes that fit were \
                             written); allocate as much as the input holds",
                });
            }
            self.upload(h, total, &chunk[..n])?;
            total += n as u64;
        }
    }
}

fn read_full(reader: &mut dyn std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) if n > buf.len() - filled => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the reader claims {n} bytes read into a buffer of {} \
                         (a bug in its `Read` impl)",
                        buf.len() - filled
                    ),
                ))
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A readback pipelined over a ring's slots: for each piece, `record` copies it into a free
/// slot (returning the copy's submission); `finish` reads a slot once its copy is done, pieces
/// in order. A slot is recorded into again only after the piece it held was finished, so the
/// device fills one slot while the host reads another.
/// `0..total` in consecutive pieces of at most `slot_size` bytes, one per staging slot.
pub(super) fn slot_pieces(total: usize, slot_size: usize) -> impl Iterator<Item = Range<usize>> {
    (0..total)
        .step_by(slot_size)
        .map(move |at| at..at + slot_size.min(total - at))
}

/// Records the copy of the allocation's bytes `offset + piece` (rounded up to whole words)
/// into the start of a readback slot at least that large; returns its submission.
pub(super) fn copy_into_slot<B: Storage>(
    backend: &B,
    mem: &SharedManager<B>,
    h: BufferHandle,
    offset: u64,
    slot: &B::Block,
    piece: &Range<usize>,
) -> Result<QueueIndex> {
    let len = (piece.len() as u64).next_multiple_of(WORD);
    let src = offset + piece.start as u64;
    let mut m = mem.lock();
    let r = m.resolve(h, src, Some(len), Access::Words, backend.limits())?;
    // SAFETY: the source was resolved inside its block, word-aligned; the destination is the
    // slot's first `len` bytes (the caller's slot holds at least the piece, and slots are whole
    // numbers of words); a staging slot is its own block.
    let index = unsafe { backend.copy(r.block, r.offset, slot, 0, len)? };
    m.touch_read(h, index);
    Ok(index)
}

pub(super) fn pipelined_readback<B: Storage, P>(
    backend: &B,
    mem: &SharedManager<B>,
    ring: &mut Ring<B::Block>,
    spare: &mut Ring<B::Block>,
    pieces: impl IntoIterator<Item = P>,
    mut record: impl FnMut(&B::Block, &P) -> Result<QueueIndex>,
    mut finish: impl FnMut(&B::Block, P) -> Result<()>,
) -> Result<()> {
    let mut pending: VecDeque<(usize, P, QueueIndex)> = VecDeque::new();
    let mut done = |(slot, piece, index): (usize, P, QueueIndex), ring: &Ring<B::Block>| {
        backend.wait(index)?;
        finish(&ring.slots[slot].block, piece)
    };
    for piece in pieces {
        let s = ring.acquire(backend, mem, spare)?;
        if let Some(pos) = pending.iter().position(|p| p.0 == s) {
            for p in pending.drain(..=pos).collect::<Vec<_>>() {
                done(p, ring)?;
            }
        }
        let index = record(&ring.slots[s].block, &piece)?;
        ring.slots[s].in_flight = index;
        backend.submit()?;
        pending.push_back((s, piece, index));
    }
    for p in pending {
        done(p, ring)?;
    }
    Ok(())
}
