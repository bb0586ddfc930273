//! Interop with applications that own their wgpu device: vramkit's allocations bound in passes
//! the application records, and the application's submissions known to vramkit's release
//! rules.
//!
//! The rules (one queue orders everything; work runs in the order it reaches the queue), and
//! what happens when one is broken:
//! 1. **Bind** an allocation with [`Interop::wgpu_binding`](crate::interop::Interop::wgpu_binding): the buffer, offset and size of
//!    its range, as a lease. From then on the allocation never moves (compaction works around
//!    it), its block is never again trusted to read as zeros (new zeroed allocations in it are
//!    cleared), and whatever vramkit recorded before is submitted. While the binding (or a
//!    clone) lives, its range is not handed out again, even once the allocation is released;
//!    a context dropped while bindings live leaves their buffers to them (wgpu frees a buffer
//!    when its last binding is dropped) and logs a warning. *Broken* — a bind group kept after
//!    its binding was dropped and the allocation released: its passes reach whatever owns the
//!    range next.
//! 2. **Submit with [`Interop::submit_with`](crate::interop::Interop::submit_with)**: vramkit's recorded work, then your command
//!    buffers right after it (a submission of their own: a buffer the device refuses takes
//!    none of vramkit's work with it), recorded as using the handles you list (rules 2 and 4
//!    in one call). Or by hand: call [`Context::submit`] before `Queue::submit`, then
//!    [`Interop::track_external`](crate::interop::Interop::track_external) after it. *Broken* — your work submitted before vramkit's
//!    runs first, whatever it reads or writes; `Queue::write_buffer` into a bound range lands
//!    before the next submission of *any* command buffers, so before vramkit's work recorded
//!    earlier but not yet submitted: call [`Context::submit`] first, or upload with vramkit.
//! 3. **Stay inside** `offset .. offset + size`, and never `destroy`, map or rebind the buffer
//!    beyond it: it holds other allocations of the context. *Broken* — wgpu checks accesses
//!    against the whole buffer, so a stray write cannot leave it, but it can reach a
//!    neighbour; a destroyed buffer makes the device refuse every later submission that uses
//!    any allocation in it: the refused call returns [`Error::Backend`] naming the launches it
//!    held, and downloads of the allocations that work used fail until they are written again
//!    (never stale data).
//! 4. **Tell vramkit** which submissions used the allocation ([`Interop::submit_with`](crate::interop::Interop::submit_with) does),
//!    and release it only after submitting them: its release then waits for them, and
//!    [`Context::wait`] covers them. *Broken* — untracked, the block may go back to the device
//!    while your work runs (wgpu keeps the memory alive, but vramkit's budget counts it free).
//! 5. Textures alike: [`Interop::wgpu_texture`](crate::interop::Interop::wgpu_texture) and [`Interop::track_external_texture`](crate::interop::Interop::track_external_texture)
//!    (textures never move; a released texture is freed once tracked work completed).
//!
//! vramkit's calls run inside wgpu error scopes: on a device you own, your uncaptured-error
//! handler keeps getting your errors and only those (see
//! [`WgpuBackend::from_device`](crate::backend::wgpu::WgpuBackend::from_device)).
//!
//! # Device pointers (CUDA)
//!
//! Memory for code outside vramkit: device pointers of allocations, and allocations made for
//! streams vramkit does not own (a program's CUDA streams), reused in their order.
//!
//! The rules (see [`memory::streams`](crate::memory) for how the manager keeps them):
//! 1. [`Interop::alloc_on`](crate::interop::Interop::alloc_on) allocates for work on a caller's stream and returns the handle and
//!    its [`DevicePtr`]. The memory is not cleared unless the description asks for zeros, and it
//!    never moves. Released with [`Context::release`], it is reused at once by later requests
//!    on the same stream, and by other streams (vramkit's own queue included) only after the
//!    stream has passed the release (a CUDA event shows it).
//! 2. [`Interop::record_stream`](crate::interop::Interop::record_stream) declares that another stream uses the allocation too (as
//!    `torch.Tensor.record_stream`): released, it is held until that stream passes the
//!    release as well.
//! 3. [`Interop::device_ptr`](crate::interop::Interop::device_ptr) gives the pointer of any allocation (made with
//!    [`Context::alloc`](crate::Context::alloc) too) as a [`DeviceLease`]: the allocation stays where it is for its
//!    life, and its range is not handed out again while a clone of the lease lives, even once
//!    the allocation is released (the release then completes when the last lease is
//!    dropped, and waits for the allocation's streams as usual). Work vramkit recorded on it
//!    so far is submitted; order your own work after it yourself (`CudaBackend::stream` is
//!    vramkit's stream), or allocate on your stream. A context dropped while leases live leaves their device
//!    memory allocated (and logs a warning), so the pointers stay valid.
//! 4. Stay inside `address .. address + size`; a pointer from `alloc_on` is valid until the
//!    allocation is released, one from a lease while the lease lives.
//! 5. A stream you allocated or recorded on stays alive until [`Interop::forget_stream`](crate::interop::Interop::forget_stream)
//!    returned for it (vramkit records events on it after a release, when another stream
//!    needs the memory): see [`ForeignStream::from_raw`](crate::backend::ForeignStream::from_raw).

use std::num::NonZeroU64;

pub use crate::device_ptr::{DeviceLease, DevicePtr};

use crate::backend::wgpu::WgpuBackend;
use crate::backend::{Backend, Storage};
use crate::memory::lease::Lease;
use crate::memory::manager::Access;
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;
use crate::{BufferHandle, Context, SubmissionIndex, TextureHandle};

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

/// Other code on the context's memory: wgpu bindings and textures for an app's own passes
/// (wgpu), device pointers and foreign streams (CUDA), and work submitted together. From
/// [`Context::interop`].
pub struct Interop<'a, B: Backend> {
    pub(crate) ctx: &'a Context<B>,
}

impl<B: Backend> Context<B> {
    /// Other code on the context's memory: wgpu bindings, device pointers, foreign streams.
    pub fn interop(&self) -> Interop<'_, B> {
        Interop { ctx: self }
    }
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
    /// [`wait`](Context::wait) covers it). Returns the application's submission.
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
    /// the allocations of `uses` hold unknown data, see [`Context::download`]);
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
