//! wgpu interop: the buffer range behind an allocation and the texture behind a texture
//! handle, for an application's own passes, and its own submissions ordered with vramkit's.

use std::num::NonZeroU64;

use super::Interop;
use crate::backend::wgpu::WgpuBackend;
use crate::backend::Storage;
use crate::memory::lease::Lease;
use crate::memory::manager::Access;
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;
use crate::{BufferHandle, SubmissionIndex, TextureHandle};

/// The range of a wgpu buffer behind an allocation, for binding it in the application's own
/// passes ([`Interop::wgpu_binding`](crate::interop::Interop::wgpu_binding)). The buffer has usages `STORAGE | COPY_SRC | COPY_DST`.
///
/// A lease: while it (or a clone) lives, the range is not handed out again, even once the
/// allocation is released; keep it for as long as bind groups made from it are used.
#[derive(Clone)]
pub struct WgpuBinding {
    /// The buffer; other allocations of the context share it.
    pub buffer: wgpu::Buffer,
    /// Where the allocation starts in the buffer: a multiple of the device's
    /// `min_storage_buffer_offset_alignment`.
    pub offset: u64,
    /// Bytes of the binding: the allocation's size rounded up to whole 4-byte words.
    pub size: u64,
    _lease: Lease,
}

impl std::fmt::Debug for WgpuBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBinding")
            .field("buffer", &self.buffer)
            .field("offset", &self.offset)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl WgpuBinding {
    /// The range as a bind-group entry's resource.
    pub fn as_binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: self.offset,
            size: NonZeroU64::new(self.size),
        })
    }
}

impl Interop<'_, WgpuBackend> {
    /// The wgpu buffer range behind an allocation of [`MemoryKind::Device`], to bind in passes
    /// the application records; see the [rules](crate::interop). The allocation becomes
    /// immovable, and the work vramkit recorded so far is submitted.
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Unsupported`] for memory of another kind (the host maps
    /// unified memory, and a mapped buffer cannot be used in a submission); [`Error::TooLarge`]
    /// for an allocation larger than the device's largest storage binding.
    pub fn wgpu_binding(&self, handle: BufferHandle) -> Result<WgpuBinding> {
        let mut m = self.ctx.manager();
        let r = m.resolve(handle, 0, None, Access::Bind, self.ctx.backend.limits())?;
        if r.kind != MemoryKind::Device {
            return Err(Error::Unsupported {
                what: format!("a wgpu binding of {:?} memory", r.kind),
                reason: "only MemoryKind::Device allocations can be bound in the application's \
                         passes (vramkit maps host-visible memory for the host's writes); \
                         allocate with MemoryKind::Device and move data with upload/download"
                    .into(),
            });
        }
        let (buffer, offset, size) = (r.block.buffer().clone(), r.offset, r.size);
        m.pin(handle)?;
        m.distrust(handle)?;
        // Taken under the lock that a release takes too: no release slips in between.
        let lease = Lease::take(&m.leases, handle.key);
        drop(m);
        let binding = WgpuBinding {
            buffer,
            offset,
            size,
            _lease: lease,
        };
        self.ctx.backend.submit()?;
        Ok(binding)
    }

    /// The wgpu texture behind a texture handle, to bind in passes the application records
    /// (its usages: `COPY_SRC | COPY_DST`, plus `TEXTURE_BINDING` / `STORAGE_BINDING` as its
    /// [`TextureUsage`](crate::texture::TextureUsage) says). The work vramkit recorded so far is
    /// submitted; see the [rules](crate::interop).
    ///
    /// # Errors
    /// [`Error::StaleHandle`].
    pub fn wgpu_texture(&self, handle: TextureHandle) -> Result<wgpu::Texture> {
        let texture = self.ctx.manager().texture(handle)?.raw.texture.clone();
        self.ctx.backend.submit()?;
        Ok(texture)
    }

    /// Submits the work vramkit recorded, then the application's command buffers `buffers` (a
    /// submission of their own, right after vramkit's), and records that they use the
    /// allocations `uses`: the interop rules 2 and 4 in one call (vramkit's work runs first;
    /// releasing an allocation of `uses` waits for the application's submission;
    /// [`wait`](crate::Context::wait) covers it). Returns the application's submission.
    ///
    /// ```no_run
    /// # fn demo(ctx: &vramkit::Context<vramkit::backend::wgpu::WgpuBackend>,
    /// #         h: vramkit::BufferHandle, mut encoder: vramkit::wgpu::CommandEncoder)
    /// #         -> vramkit::Result<()> {
    /// let binding = ctx.interop().wgpu_binding(h)?;
    /// // ... record the application's pass over `binding.as_binding()` into `encoder` ...
    /// ctx.interop().submit_with([encoder.finish()], &[h])?;
    /// ctx.release(h)?; // the range is reused once the pass completed and `binding` is dropped
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::StaleHandle`] (nothing is submitted when a handle is stale before; one released
    /// while the buffers were submitted is reported after the others are recorded);
    /// [`Error::Backend`] if the device refused the application's buffers (none of them ran:
    /// the allocations of `uses` hold unknown data, see [`Context::download`](crate::Context::download));
    /// [`Error::DeviceLost`].
    pub fn submit_with(
        &self,
        buffers: impl IntoIterator<Item = wgpu::CommandBuffer>,
        uses: &[BufferHandle],
    ) -> Result<SubmissionIndex> {
        {
            let m = self.ctx.manager();
            for &h in uses {
                m.get(h)?;
            }
        }
        let submitted = self.ctx.backend.submit_with(buffers.into_iter().collect());
        let mut m = self.ctx.manager();
        let index = match submitted {
            Ok(index) => index,
            Err(e) => {
                if let Error::Backend { message } = &e {
                    for &h in uses {
                        m.mark_lost(h, message);
                    }
                }
                return Err(e);
            }
        };
        // Every handle still live is recorded; one released in between is an error, not a
        // silent no-op, reported after the others are recorded.
        let mut stale = Ok(());
        for &h in uses {
            match m.get(h) {
                Ok(_) => m.touch(h, index),
                Err(e) => stale = stale.and(Err(e)),
            }
        }
        stale.map(|()| self.ctx.submission(index))
    }

    /// Records that `submission`, made by the application on this context's queue, uses the
    /// allocation: the allocation's last use becomes a vramkit submission after it (an empty
    /// one vramkit makes now), which [`wait`](crate::Context::wait) and the release rules then
    /// respect. Call it after `Queue::submit`, before releasing the allocation.
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::InvalidParameter`] for an index this device never
    /// returned (wgpu's indices do not say their device: one of another device that is not
    /// past this device's latest is accepted, and orders nothing); [`Error::DeviceLost`].
    pub fn track_external(
        &self,
        handle: BufferHandle,
        submission: &wgpu::SubmissionIndex,
    ) -> Result<()> {
        self.ctx.manager().get(handle)?;
        let after = self.ctx.backend.after_external(submission)?;
        // Checked again under the lock that records it: a release in between is an error,
        // not a silent no-op.
        let mut m = self.ctx.manager();
        m.get(handle)?;
        m.touch(handle, after);
        Ok(())
    }

    /// [`track_external`](Self::track_external) for a texture: its release waits for
    /// `submission`.
    ///
    /// # Errors
    /// As [`track_external`](Self::track_external).
    pub fn track_external_texture(
        &self,
        handle: TextureHandle,
        submission: &wgpu::SubmissionIndex,
    ) -> Result<()> {
        self.ctx.manager().texture(handle)?;
        let after = self.ctx.backend.after_external(submission)?;
        let mut m = self.ctx.manager();
        m.texture(handle)?;
        m.touch_texture(handle, after);
        Ok(())
    }
}
