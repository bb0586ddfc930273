//! Device pointers for code outside vramkit; the rules are in [`crate::interop`].

use crate::backend::{Backend, ForeignStream, StreamRef};
use crate::interop::Interop;
use crate::memory::lease::Lease;
use crate::memory::AllocDesc;
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;
use crate::BufferHandle;

/// The device memory behind an allocation, for code outside vramkit (a CUDA kernel, cuBLAS,
/// cudarc, PyTorch): see the [rules](crate::interop#device-pointers-cuda).
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
    /// [rules](crate::interop#device-pointers-cuda).
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
    /// As [`alloc`](crate::Context::alloc); [`Error::Unsupported`] where the backend has no foreign
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
        let mut m = self.ctx.manager();
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
        self.ctx
            .manager()
            .record_stream(handle, StreamRef::Foreign(stream))
    }

    /// Waits until the memory released on `stream` (and on vramkit's other streams) has been
    /// confirmed passed, and forgets the stream: after this, and once nothing allocated or
    /// recorded on it is live, the stream may be destroyed (see
    /// [`ForeignStream::from_raw`]).
    ///
    /// # Errors
    /// The driver's error while waiting (a lost device).
    pub fn forget_stream(&self, stream: ForeignStream) -> Result<()> {
        self.ctx
            .manager()
            .forget_stream(&self.ctx.backend, StreamRef::Foreign(stream))
    }

    /// The device pointer of an allocation, lent as a [`DeviceLease`]: the allocation never
    /// moves again, and its range is not handed out again while the lease lives; work vramkit
    /// recorded so far is submitted. See the [rules](crate::interop#device-pointers-cuda).
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Unsupported`] where the backend's memory has no
    /// address outside code can use (wgpu: use `wgpu_binding`).
    pub fn device_ptr(&self, handle: BufferHandle) -> Result<DeviceLease> {
        let mut m = self.ctx.manager();
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
