//! [`Owned`]: an allocation released when it goes out of scope, beside the explicit
//! [`Context::release`].

use std::sync::Arc;

use crate::backend::Backend;
use crate::memory::{AllocDesc, BufferHandle};
use crate::types::error::Result;
use crate::Context;

/// An allocation that releases itself when dropped, exactly once. It holds an
/// `Arc<Context>`, so the context lives at least as long, and dereferences to its
/// [`BufferHandle`] for every call that takes one.
///
/// Release follows [`Context::release`]'s rules (device memory is reused in queue order, so
/// dropping an allocation that submitted work still uses is fine). An error of the release in
/// `Drop` (the device was lost) is logged and kept for the context's next allocation, which
/// returns it. [`release`](Self::release) releases now and returns the error instead;
/// [`into_handle`](Self::into_handle) gives up ownership, leaving the release to the caller.
///
/// Releasing the handle behind an `Owned` with [`Context::release`] makes its drop find a
/// stale handle ([`Error::StaleHandle`](crate::Error::StaleHandle)), which is logged at
/// `warn` and not kept (the next allocation, maybe another thread's, has nothing to do with
/// it): use [`Owned::release`] or [`into_handle`](Self::into_handle) instead. Handles are
/// generational, so that drop never releases another allocation.
///
/// ```
/// use std::sync::Arc;
/// let ctx = Arc::new(vramkit::Context::host(Default::default()));
/// {
///     let x = ctx.alloc_owned(vramkit::AllocDesc::new("x", 1024))?;
///     ctx.upload_slice(*x, &[1.0f32; 256])?;
///     assert_eq!(ctx.stats().live, 1);
/// } // released here
/// assert_eq!((ctx.stats().live, ctx.stats().releases), (0, 1));
/// # Ok::<(), vramkit::Error>(())
/// ```
pub struct Owned<B: Backend = crate::backend::DefaultBackend> {
    ctx: Arc<Context<B>>,
    handle: BufferHandle,
    /// Whether `Drop` still has to release the allocation.
    owns: bool,
}

impl<B: Backend> Context<B> {
    /// Allocates as [`alloc`](Self::alloc) does, returning an [`Owned`] allocation that
    /// releases itself when dropped.
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc).
    pub fn alloc_owned(self: &Arc<Self>, desc: AllocDesc) -> Result<Owned<B>> {
        let handle = self.alloc(desc)?;
        Ok(Owned {
            ctx: Arc::clone(self),
            handle,
            owns: true,
        })
    }
}

impl<B: Backend> Owned<B> {
    /// The handle, for calls that take a [`BufferHandle`] (also reached through `*owned`).
    pub fn handle(&self) -> BufferHandle {
        self.handle
    }

    /// The context the allocation belongs to.
    pub fn context(&self) -> &Arc<Context<B>> {
        &self.ctx
    }

    /// Gives up ownership without releasing: the allocation lives on until
    /// [`Context::release`] releases the returned handle.
    pub fn into_handle(mut self) -> BufferHandle {
        self.owns = false;
        self.handle
    }

    /// Releases the allocation now, returning what [`Context::release`] returns.
    ///
    /// # Errors
    /// As [`Context::release`]: [`Error::StaleHandle`](crate::Error::StaleHandle) if the
    /// handle was released behind the `Owned`'s back.
    pub fn release(mut self) -> Result<()> {
        self.owns = false;
        self.ctx.release(self.handle)
    }
}

impl<B: Backend> std::ops::Deref for Owned<B> {
    type Target = BufferHandle;

    fn deref(&self) -> &BufferHandle {
        &self.handle
    }
}

impl<B: Backend> std::fmt::Debug for Owned<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owned")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Drop for Owned<B> {
    fn drop(&mut self) {
        if !self.owns {
            return;
        }
        self.owns = false;
        match self.ctx.release(self.handle) {
            Ok(()) => {}
            Err(e @ crate::Error::StaleHandle { .. }) => {
                log::warn!("vramkit: an owned allocation was released behind its back: {e}");
            }
            Err(e) => self.ctx.manager().defer_error(e),
        }
    }
}
