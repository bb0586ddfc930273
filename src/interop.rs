//! Interop with applications that own their wgpu device: vramkit's allocations bound in passes
//! the application records, and the application's submissions known to vramkit's release
//! rules.
//!
//! The rules (one queue orders everything; work runs in the order it reaches the queue):
//! 1. **Bind** an allocation with [`Context::wgpu_binding`]: the buffer, offset and size of
//!    its range. From then on the allocation never moves (compaction works around it; nothing
//!    undoes this, so a binding kept for long also keeps its block from being compacted away),
//!    and whatever vramkit recorded before (its clearing, uploads, kernels) is submitted.
//! 2. **Submit vramkit's work first.** vramkit records kernels into an encoder of its own that
//!    reaches the queue at [`Context::submit`] (transfers submit on their own). Call it before
//!    you submit work that touches an allocation vramkit has recorded work on since: else
//!    your work runs first, whether it reads what vramkit's kernels write or writes what they
//!    read.
//! 3. **Stay inside** `offset .. offset + size`, and never `destroy`, map or rebind the buffer
//!    beyond it: it holds other allocations of the context (wgpu checks accesses against the
//!    whole buffer, so a stray write cannot leave it, but it can reach a neighbour, and a
//!    destroyed buffer fails every allocation in it, reported as errors of later vramkit
//!    calls).
//! 4. **Tell vramkit** which of your submissions used the allocation, with
//!    [`Context::track_external`], and release it only after submitting them. Device memory
//!    is reused in queue order (as on one CUDA stream), so work vramkit records later runs
//!    after yours; tracking keeps the block it lives in from going back to the device before
//!    your work completed, and makes [`Context::wait`] and [`Context::wait_for`] cover it.
//! 5. Textures alike: [`Context::wgpu_texture`] and [`Context::track_external_texture`]
//!    (textures never move; a released texture is freed once tracked work completed).

use std::num::NonZeroU64;

use crate::backend::wgpu::WgpuBackend;
use crate::backend::{MemoryKind, Storage};
use crate::error::{Error, Result};
use crate::memory::manager::Access;
use crate::{lock, BufferHandle, Context, TextureHandle};

/// The range of a wgpu buffer behind an allocation, for binding it in the application's own
/// passes ([`Context::wgpu_binding`]). The buffer has usages `STORAGE | COPY_SRC | COPY_DST`.
#[derive(Clone, Debug)]
pub struct WgpuBinding {
    /// The buffer; other allocations of the context share it.
    pub buffer: wgpu::Buffer,
    /// Where the allocation starts in the buffer: a multiple of the device's
    /// `min_storage_buffer_offset_alignment`.
    pub offset: u64,
    /// Bytes of the binding: the allocation's size rounded up to whole 4-byte words.
    pub size: u64,
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

impl Context<WgpuBackend> {
    /// The wgpu buffer range behind an allocation of [`MemoryKind::Device`], to bind in passes
    /// the application records; see the [rules](crate::interop). The allocation becomes
    /// immovable, and the work vramkit recorded so far is submitted.
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Unsupported`] for memory of another kind (the host maps
    /// unified memory, and a mapped buffer cannot be used in a submission); [`Error::TooLarge`]
    /// for an allocation larger than the device's largest storage binding.
    pub fn wgpu_binding(&self, handle: BufferHandle) -> Result<WgpuBinding> {
        let mut m = lock(&self.mem);
        let r = m.resolve(handle, 0, None, Access::Bind, self.backend.limits())?;
        if r.kind != MemoryKind::Device {
            return Err(Error::Unsupported {
                what: format!("a wgpu binding of {:?} memory", r.kind),
                reason: "only MemoryKind::Device allocations can be bound in the application's \
                         passes (vramkit maps host-visible memory for the host's writes); \
                         allocate with MemoryKind::Device and move data with upload/download"
                    .into(),
            });
        }
        let binding = WgpuBinding {
            buffer: r.block.buffer().clone(),
            offset: r.offset,
            size: r.size,
        };
        m.pin(handle)?;
        drop(m);
        self.backend.submit()?;
        Ok(binding)
    }

    /// The wgpu texture behind a texture handle, to bind in passes the application records
    /// (its usages: `COPY_SRC | COPY_DST`, plus `TEXTURE_BINDING` / `STORAGE_BINDING` as its
    /// [`TextureUsage`](crate::TextureUsage) says). The work vramkit recorded so far is
    /// submitted; see the [rules](crate::interop).
    ///
    /// # Errors
    /// [`Error::StaleHandle`].
    pub fn wgpu_texture(&self, handle: TextureHandle) -> Result<wgpu::Texture> {
        let texture = lock(&self.mem).texture(handle)?.raw.texture.clone();
        self.backend.submit()?;
        Ok(texture)
    }

    /// Records that `submission`, made by the application on this context's queue, uses the
    /// allocation: the allocation's last use becomes a vramkit submission after it (an empty
    /// one vramkit makes now), which [`wait`](Context::wait) and the release rules then
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
        lock(&self.mem).get(handle)?;
        let after = self.backend.after_external(submission)?;
        // Checked again under the lock that records it: a release in between is an error,
        // not a silent no-op.
        let mut m = lock(&self.mem);
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
        lock(&self.mem).texture(handle)?;
        let after = self.backend.after_external(submission)?;
        let mut m = lock(&self.mem);
        m.texture(handle)?;
        m.touch_texture(handle, after);
        Ok(())
    }
}
