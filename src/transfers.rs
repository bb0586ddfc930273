//! Closure-driven transfers on [`Context`]: the caller fills (or reads) the staging slots in
//! place, chunk by chunk, with no copy between its memory and staging.

use std::cell::RefCell;
use std::ops::Range;

use crate::backend::Backend;
use crate::memory::{BufferHandle, EventKind};
use crate::types::error::{Error, Result};
use crate::Context;

thread_local! {
    /// The contexts whose transfer closures this thread is running, outermost first (a
    /// closure of one context may run a transfer of another, whose closure may come back).
    static IN_CLOSURE: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Marks this thread as inside a transfer closure of context `id` until dropped (also on
/// unwind).
struct Inside;

impl Inside {
    fn enter(id: u32) -> Self {
        IN_CLOSURE.with(|c| c.borrow_mut().push(id));
        Self
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        IN_CLOSURE.with(|c| c.borrow_mut().pop());
    }
}

/// Refuses a transfer that a transfer closure of the same context started on this thread, at
/// any depth: it would wait for the staging ring the outer transfer holds. (Another thread the
/// closure waits for gets no such answer: it waits for the ring too; don't hand a context's
/// transfers to other threads from inside its closure.)
pub(crate) fn check_reentry(id: u32) -> Result<()> {
    if in_closure(id) {
        return Err(Error::Unsupported {
            what: "a transfer from inside an upload_with/download_with closure".into(),
            reason: "the outer transfer holds the staging ring; collect what to move and \
                     transfer it after the closure returns (or use another context)"
                .into(),
        });
    }
    Ok(())
}

/// Whether this thread runs a transfer closure of context `id` (at any depth).
pub(crate) fn in_closure(id: u32) -> bool {
    IN_CLOSURE.with(|c| c.borrow().contains(&id))
}

impl<B: Backend> Context<B> {
    /// Writes `range` of an allocation with bytes `fill` produces in place, in the staging
    /// memory itself (pinned host memory on CUDA, a mapped buffer on wgpu): no copy between
    /// the caller's memory and staging. `fill(offset, chunk)` is called once per chunk, in
    /// order, with the chunk's offset from `range.start` and the chunk to fill (at most
    /// [`staging_chunk`](Self::staging_chunk) bytes); the device copies chunk `i` while
    /// `fill` writes chunk `i + 1`.
    ///
    /// The chunk is a [`WriteOnly`](crate::wgpu::WriteOnly) view: mapped staging may be
    /// write-combining, where reads crawl, and its earlier contents are none of the filler's
    /// business. Write all of it: bytes left unwritten are unspecified (earlier staging
    /// contents, never memory outside staging). `copy_from_slice`, `write_iter`, `fill` and
    /// `split_at` are what it offers. Where the range's ends are not 4-byte aligned or the
    /// memory is host-visible, chunks go through a temporary instead, with the same calls.
    ///
    /// If `fill` panics, the panic propagates: earlier chunks were written, later bytes keep
    /// their old values, and the context stays usable (no staging leaks). Inside `fill`, this
    /// context's transfers return [`Error::Unsupported`] (the outer transfer holds the staging
    /// ring); everything else works: [`trim`](Self::trim) leaves the staging ring alone, and
    /// [`max_batch`](Self::max_batch) counts one staging slot as already taken.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("ramp", 1000))?;
    /// // The chunk is a write-only view (mapped memory may be write-combining).
    /// ctx.upload_with(h, 0..1000, |at, chunk| {
    ///     let n = chunk.len() as u64;
    ///     chunk.write_iter((at..at + n).map(|i| i as u8));
    /// })?;
    /// assert_eq!(ctx.download(h)?[999], (999 % 256) as u8);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if the range ends before it starts or passes the allocation's
    /// end; [`Error::StaleHandle`]; [`Error::Staging`] when the budget leaves no room for a
    /// staging slot; [`Error::Unsupported`] when called from inside another transfer's closure.
    pub fn upload_with(
        &self,
        handle: BufferHandle,
        range: Range<u64>,
        mut fill: impl FnMut(u64, crate::wgpu::WriteOnly<'_, [u8]>),
    ) -> Result<()> {
        let len = range.end.saturating_sub(range.start);
        let id = self.id;
        self.transfer(|t| {
            t.upload_with(handle, range, &mut |at, chunk| {
                let _inside = Inside::enter(id);
                fill(at, chunk)
            })
        })?;
        self.traced(EventKind::Upload, handle, len);
        Ok(())
    }

    /// Reads `range` of an allocation, handing it to `read(offset, chunk)` chunk by chunk, in
    /// order, in place in the staging memory (no copy into a caller's buffer); `offset` is the
    /// chunk's offset from `range.start`. The device copies the next chunk while `read` looks
    /// at this one. Panics and nesting as in [`upload_with`](Self::upload_with); a panic
    /// leaves the allocation unchanged.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("data", 64))?;
    /// ctx.upload(h, &[3; 64])?;
    /// let mut sum = 0u64;
    /// ctx.download_with(h, 8..40, |_, chunk| sum += chunk.iter().map(|&b| b as u64).sum::<u64>())?;
    /// assert_eq!(sum, 3 * 32);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`upload_with`](Self::upload_with).
    pub fn download_with(
        &self,
        handle: BufferHandle,
        range: Range<u64>,
        mut read: impl FnMut(u64, &[u8]),
    ) -> Result<()> {
        let len = range.end.saturating_sub(range.start);
        let id = self.id;
        self.transfer(|t| {
            t.download_with(handle, range, &mut |at, chunk| {
                let _inside = Inside::enter(id);
                read(at, chunk)
            })
        })?;
        self.traced(EventKind::Download, handle, len);
        Ok(())
    }

    /// The most bytes one chunk of [`upload_with`](Self::upload_with) or
    /// [`download_with`](Self::download_with) holds: the staging slot size.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// assert_eq!(ctx.staging_chunk(), 4 << 20);
    /// ```
    pub fn staging_chunk(&self) -> u64 {
        self.staging_slot()
    }
}
