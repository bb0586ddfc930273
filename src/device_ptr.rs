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
//!    [`Context::alloc`] too) as a [`DeviceLease`]: the allocation stays where it is for its
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
//!    needs the memory): see [`ForeignStream::from_raw`].

use crate::backend::{Backend, ForeignStream, StreamRef};
use crate::interop::Interop;
use crate::lock;
use crate::memory::lease::Lease;
use crate::memory::AllocDesc;
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;
use crate::BufferHandle;

/// The device memory behind an allocation, for code outside vramkit (a CUDA kernel, cuBLAS,
/// cudarc, PyTorch): see the [rules](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevicePtr {
    /// The address: a `CUdeviceptr` on CUDA, a host address on the host backend.
    pub address: u64,
    /// Bytes the allocation was asked for; the pointer is valid for exactly these.
    pub size: u64,
    /// The stream the allocation was made for.
    pub stream: StreamRef,
}

/// A device pointer lent to code outside vramkit ([`Interop::device_ptr`](crate::interop::Interop::device_ptr)): while it (or a
/// clone) lives, the allocation's range is not handed out again, even once the allocation is
/// released. Dereferences to its [`DevicePtr`].
#[derive(Clone)]
pub struct DeviceLease {
    ptr: DevicePtr,
    _lease: Lease,
}

impl DeviceLease {
    /// The pointer, size and stream.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }
}

impl std::ops::Deref for DeviceLease {
    type Target = DevicePtr;
    fn deref(&self) -> &DevicePtr {
        &self.ptr
    }
}

impl std::fmt::Debug for DeviceLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DeviceLease").field(&self.ptr).finish()
    }
}

impl<B: Backend> Interop<'_, B> {
    /// Allocates for work on `stream`, a stream vramkit does not own (a `CUstream` as an
    /// integer; [`ForeignStream::DEFAULT`] is CUDA's legacy default stream), and returns the
    /// handle and the allocation's [`DevicePtr`]. The allocation never moves. See the
    /// [rules](crate::device_ptr).
    ///
    /// ```
    /// use vramkit::backend::host::{HostBackend, HostConfig};
    /// use vramkit::backend::ForeignStream;
    /// use vramkit::{AllocDesc, Context, ContextDesc};
    /// // Host memory stands for device memory here; fixed blocks keep their addresses.
    /// let host = HostBackend::new(HostConfig { resizable: false, ..Default::default() });
    /// let ctx = Context::with_backend(host, ContextDesc::default());
    /// // SAFETY: the host backend's streams are numbers of its model.
    /// let s = unsafe { ForeignStream::from_raw(1) };
    /// let (a, ptr) = ctx.interop().alloc_on(AllocDesc::new("activations", 4096).uninit(), s)?;
    /// assert_eq!(ptr.size, 4096);
    /// ctx.release(a)?;
    /// // Reused at once on the same stream.
    /// let (b, again) = ctx.interop().alloc_on(AllocDesc::new("activations", 4096).uninit(), s)?;
    /// assert_eq!(again.address, ptr.address);
    /// ctx.release(b)?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`alloc`](Context::alloc); [`Error::Unsupported`] where the backend has no foreign
    /// streams or no device addresses (wgpu).
    pub fn alloc_on(
        &self,
        desc: AllocDesc,
        stream: ForeignStream,
    ) -> Result<(BufferHandle, DevicePtr)> {
        if desc.kind != MemoryKind::Device && desc.kind != MemoryKind::Unified {
            return Err(Error::Unsupported {
                what: format!("`{}`: {:?} memory on a stream", desc.label, desc.kind),
                reason: "allocations for other streams are Device or Unified memory".into(),
            });
        }
        let zeroed = desc.zeroed;
        let on = StreamRef::Foreign(stream);
        let mut m = lock(&self.ctx.mem);
        let h = m.alloc_on(&self.ctx.backend, desc.immovable(), on)?;
        let (address, size, _) = match m.device_address(&self.ctx.backend, h) {
            Ok(a) => a,
            Err(e) => {
                let _ = m.release(&self.ctx.backend, h);
                return Err(e);
            }
        };
        drop(m);
        if zeroed {
            // The clear ran on vramkit's queue: it finishes before the caller's stream starts.
            let index = self.ctx.backend.submit()?;
            self.ctx.backend.wait(index)?;
        }
        Ok((
            h,
            DevicePtr {
                address,
                size,
                stream: on,
            },
        ))
    }

    /// Declares that work on `stream` uses the allocation too: when released, it is reused
    /// only after `stream` has passed the release (PyTorch's `record_stream`).
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Unsupported`] for an allocation made for vramkit's
    /// own queue in a context that never allocated on a foreign stream.
    pub fn record_stream(&self, handle: BufferHandle, stream: ForeignStream) -> Result<()> {
        lock(&self.ctx.mem).record_stream(handle, StreamRef::Foreign(stream))
    }

    /// Waits until the memory released on `stream` (and on vramkit's other streams) has been
    /// confirmed passed, and forgets the stream: after this, and once nothing allocated or
    /// recorded on it is live, the stream may be destroyed (see
    /// [`ForeignStream::from_raw`]).
    ///
    /// # Errors
    /// The driver's error while waiting (a lost device).
    pub fn forget_stream(&self, stream: ForeignStream) -> Result<()> {
        lock(&self.ctx.mem).forget_stream(&self.ctx.backend, StreamRef::Foreign(stream))
    }

    /// The device pointer of an allocation, lent as a [`DeviceLease`]: the allocation never
    /// moves again, and its range is not handed out again while the lease lives; work vramkit
    /// recorded so far is submitted. See the [rules](crate::device_ptr).
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Unsupported`] where the backend's memory has no
    /// address outside code can use (wgpu: use `wgpu_binding`).
    pub fn device_ptr(&self, handle: BufferHandle) -> Result<DeviceLease> {
        let mut m = lock(&self.ctx.mem);
        let (address, size, stream) = m.device_address(&self.ctx.backend, handle)?;
        // Taken under the lock that a release takes too: no release slips in between.
        let lease = Lease::take(&m.leases, handle.key);
        m.distrust(handle)?;
        drop(m);
        let lease = DeviceLease {
            ptr: DevicePtr {
                address,
                size,
                stream,
            },
            _lease: lease,
        };
        self.ctx.backend.submit()?;
        Ok(lease)
    }
}
