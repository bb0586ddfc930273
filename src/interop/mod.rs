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
//!    any allocation in it: the refused call returns [`Error::Backend`](crate::Error::Backend) naming the launches it
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
//!    stream has passed the release (a CUDA event shows it). On CUDA with the unmapping thread
//!    (the default), its physical pages may likewise move at once to a later request on the
//!    same stream at another address, where they would otherwise go back to the device (the
//!    old address is unmapped once the stream passed; never while the stream is captured
//!    into a graph): memory taken on a stream is used in that stream's order, the rule
//!    PyTorch's caching allocator keeps for memory it reuses.
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

pub use crate::device_ptr::{DeviceLease, DevicePtr};
#[cfg(feature = "wgpu")]
pub use wgpu_binding::WgpuBinding;

use crate::backend::Backend;
use crate::Context;

#[cfg(feature = "wgpu")]
mod wgpu_binding;

/// Other code on the context's memory: wgpu bindings and textures for an app's own passes
/// (wgpu), device pointers and foreign streams (CUDA), work submitted together, and the
/// vendor's BLAS and cooperative matrices for kernels. From [`Context::interop`].
pub struct Interop<'a, B: Backend> {
    pub(crate) ctx: &'a Context<B>,
}

impl<B: Backend> Context<B> {
    /// Other code on the context's memory: wgpu bindings, device pointers, foreign streams, the
    /// vendor BLAS.
    pub fn interop(&self) -> Interop<'_, B> {
        Interop { ctx: self }
    }
}
