//! [`Context`]: the entry point. It owns one backend and one memory manager over it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::backend::host::HostBackend;
#[cfg(feature = "wgpu")]
use crate::backend::wgpu::{WgpuBackend, WgpuConfig};
use crate::backend::{Backend, DefaultBackend};
use crate::memory::access::SharedManager;
use crate::memory::manager::{Manager, Settings};
use crate::memory::staging::Staging;
use crate::memory::trace::EventKind;
use crate::memory::transfer::Transfer;
use crate::memory::{AllocDesc, BufferHandle, MemoryStats};
use crate::memory::{CompactionDesc, Geometry};
use crate::types::debug::DebugSettings;
use crate::types::error::Result;
use crate::types::lock;
use crate::types::DeviceInfo;
use crate::SubmissionIndex;

/// How a context manages memory.
///
/// ```
/// let desc = vramkit::ContextDesc { budget: Some(256 << 20), ..Default::default() };
/// # let _ = desc;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextDesc {
    /// Hard limit on the bytes the context holds from the device (blocks and staging buffers).
    /// `None`: no limit but the device's.
    pub budget: Option<u64>,
    /// Size of the blocks medium requests share (default 20 MiB; at most 1 GiB and the largest
    /// block, rounded to the allocation unit). Requests up to a tenth of
    /// it (at most 1 MiB) share 2 MiB blocks; requests above half of it get a block of their
    /// own size rounded up to 2 MiB, which is cached and split for smaller requests once they
    /// release it.
    pub block_size: Option<u64>,
    /// Size of one staging buffer (default 4 MiB; rounded down to the allocation unit, within
    /// one unit and 256 MiB or the largest block); larger transfers stream through in chunks.
    pub staging_chunk: u64,
    /// Staging buffers per direction at most (default 4; within 1 and 64).
    pub staging_slots: usize,
    /// Bytes of empty blocks kept cached for later requests (default: all of them, as
    /// PyTorch's caching allocator; CUDA's pool attribute of the same name). Past it, blocks
    /// that empty go back to the device, and a segment's free end past it shrinks away, once
    /// the submitted work that used them has completed (a release never waits for the GPU).
    /// [`Memory::trim`](crate::Memory::trim) gives back everything free, and a request the budget refuses frees
    /// cached blocks first.
    pub release_threshold: u64,
    /// When the memory manager compacts on its own (see [`CompactionDesc`]).
    pub compaction: CompactionDesc,
    /// Keep the memory of growing segments within the compaction slack
    /// ([`CompactionDesc::slack_permille`]) over the most ever in use, by giving back free
    /// pages inside them whenever a request maps new memory (default off). For allocations
    /// that cannot move (device pointers held by other code, as in the C ABI), where
    /// compaction cannot gather free memory: physical memory then follows the live set. Past
    /// three quarters of the slack, free pages whose work has finished go back (an allocation
    /// does not wait for the device for them); past the whole slack, the manager waits for the
    /// work that used the pages it gives back, so the memory held stays within the slack. The
    /// quarter kept as a margin saves page calls where the live set moves; a larger slack
    /// saves more, for more memory. Where the backend has no pages to give back inside blocks
    /// (wgpu, fixed blocks), nothing happens.
    pub follow_live: bool,
    /// Backtraces, allocation logging and opt-outs of optional fast paths (all off by
    /// default); the library reads none of them from the environment.
    pub debug: DebugSettings,
}

impl Default for ContextDesc {
    fn default() -> Self {
        Self {
            budget: None,
            block_size: None,
            staging_chunk: 4 << 20,
            staging_slots: 4,
            release_threshold: u64::MAX,
            compaction: CompactionDesc::default(),
            follow_live: false,
            debug: DebugSettings::default(),
        }
    }
}

/// Pipelines by kernel label, entry point, whether unchecked (built without runtime checks) and
/// override values (as bits), with the source each was built from (a hit must match it).
pub(crate) type KernelKey = (
    std::borrow::Cow<'static, str>,
    std::borrow::Cow<'static, str>,
    bool,
    Vec<(&'static str, u64)>,
);
/// A pipeline's place in the cache: built by the first thread that asks for it, while the
/// others that ask wait for that build (a cold driver takes hundreds of milliseconds a kernel,
/// and a build per thread would take as many cores).
pub(crate) type KernelSlot<K> = Arc<Mutex<Option<Arc<(K, crate::signature::Signature)>>>>;
pub(crate) type CachedKernel<K> = (crate::backend::KernelSource, KernelSlot<K>);
pub(crate) type KernelCache<K> = Mutex<HashMap<KernelKey, CachedKernel<K>>>;

/// A GPU (or host) device with a memory manager: allocate, move bytes, run kernels, release.
///
/// `Context` is `Send + Sync`; share it between threads behind an `Arc` or by reference.
///
/// ```no_run
/// use vramkit::{AllocDesc, Context, ContextDesc};
/// let ctx = Context::new(ContextDesc { budget: Some(512 << 20), ..Default::default() })?;
/// let buf = ctx.alloc(AllocDesc::new("input", 1024))?;
/// ctx.upload(buf, &[7u8; 1024])?;
/// assert_eq!(ctx.download(buf)?, vec![7u8; 1024]);
/// ctx.release(buf)?;
/// # Ok::<(), vramkit::Error>(())
/// ```
pub struct Context<B: Backend = DefaultBackend> {
    pub(crate) id: u32,
    pub(crate) backend: B,
    pub(crate) mem: SharedManager<B>,
    pub(crate) staging: Mutex<Staging<B::Block>>,
    /// The staging slot size and the rings' capacity (fixed at creation), readable while a
    /// transfer holds `staging`.
    pub(crate) staging_sizes: (u64, u64),
    pub(crate) kernels: KernelCache<B::Kernel>,
    pub(crate) debug: DebugSettings,
}

impl<B: Backend> std::fmt::Debug for Context<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.backend.device_info())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "wgpu")]
impl Context<WgpuBackend> {
    /// A context on the wgpu adapter chosen by `WGPU_BACKEND` / `WGPU_ADAPTER_NAME`, or the
    /// default one, with cooperative matrices unless [`DebugSettings::no_cooperative_matrix`]
    /// ([`WgpuBackend::with_config`]).
    ///
    /// # Errors
    /// [`Error::NoAdapter`](crate::Error::NoAdapter) when there is no GPU or driver (or none matches the environment).
    pub fn new(desc: ContextDesc) -> Result<Self> {
        let config = WgpuConfig {
            cooperative_matrix: !desc.debug.no_cooperative_matrix,
        };
        Ok(Self::with_backend(WgpuBackend::with_config(config)?, desc))
    }
}

#[cfg(feature = "cuda")]
impl Context<crate::backend::cuda::CudaBackend> {
    /// A context on CUDA device `ordinal` (feature `cuda`), with cuBLAS unless
    /// [`DebugSettings::no_vendor_blas`].
    ///
    /// # Errors
    /// [`Error::NoAdapter`](crate::Error::NoAdapter) when the NVIDIA driver is missing or too old, or the device does
    /// not exist.
    pub fn cuda(ordinal: usize, desc: ContextDesc) -> Result<Self> {
        use crate::backend::cuda::{CudaBackend, CudaConfig};
        let config = CudaConfig {
            vendor_blas: !desc.debug.no_vendor_blas,
            ..CudaConfig::default()
        };
        Ok(Self::with_backend(
            CudaBackend::with_config(ordinal, config)?,
            desc,
        ))
    }
}

impl Context<HostBackend> {
    /// A context over plain host memory: no GPU needed, no kernels.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("x", 16)).unwrap();
    /// assert_eq!(ctx.download(h).unwrap(), vec![0u8; 16]);
    /// ```
    pub fn host(desc: ContextDesc) -> Self {
        Self::with_backend(HostBackend::default(), desc)
    }
}

impl<B: Backend> Context<B> {
    /// The memory manager, locked for one operation (see [`SharedManager`]): the one way in
    /// for code outside `memory/`.
    pub(crate) fn manager(&self) -> std::sync::MutexGuard<'_, Manager<B>> {
        self.mem.lock()
    }

    /// A context over any backend.
    pub fn with_backend(backend: B, desc: ContextDesc) -> Self {
        let limits = backend.limits().clone();
        let geometry = Geometry::new(
            limits.offset_alignment.max(limits.copy_alignment),
            limits.max_block_size,
            desc.block_size,
        );
        // Whole units, at most 256 MiB and the largest block (at least one unit).
        let unit = geometry.unit;
        let chunk =
            (desc.staging_chunk.min(limits.max_block_size).min(256 << 20) / unit * unit).max(unit);
        let settings = Settings {
            geometry,
            budget: desc.budget,
            release_threshold: desc.release_threshold,
            compaction: desc.compaction,
            follow_live: desc.follow_live,
            debug: desc.debug,
        };
        let staging = Staging::new(chunk, desc.staging_slots);
        let staging_sizes = (
            chunk,
            staging
                .upload
                .capacity()
                .saturating_add(staging.readback.capacity()),
        );
        let id = crate::memory::next_context_id();
        log::info!("vramkit: context {id} on {}", backend.device_info());
        Self {
            id,
            mem: SharedManager::new(Manager::new(id, settings)),
            staging: Mutex::new(staging),
            staging_sizes,
            kernels: Mutex::new(HashMap::new()),
            backend,
            debug: desc.debug,
        }
    }

    /// The backend, for interop (e.g. [`WgpuBackend::device`]).
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The device this context runs on.
    pub fn adapter_info(&self) -> DeviceInfo {
        self.backend.device_info()
    }

    /// Allocates memory. Reused memory is cleared first unless `desc` opts out.
    ///
    /// # Errors
    /// [`Error::ZeroSize`](crate::Error::ZeroSize), [`Error::TooLarge`](crate::Error::TooLarge) (never fits), [`Error::OverBudget`](crate::Error::OverBudget) (past the
    /// budget), [`Error::OutOfMemory`](crate::Error::OutOfMemory) (the driver refused), [`Error::Unsupported`](crate::Error::Unsupported) (a kind the
    /// backend lacks).
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("frame", 33_177_600))?;
    /// assert_eq!(ctx.observe().size_of(h)?, 33_177_600);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn alloc(&self, desc: AllocDesc) -> Result<BufferHandle> {
        self.manager().alloc(&self.backend, desc)
    }

    /// Releases an allocation. Device memory goes back to the pool at once: work recorded later
    /// runs after the work already recorded on it, as on one CUDA stream. Host-visible memory
    /// that submitted work still uses returns to the pool when that work completes.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle) for a released or foreign handle.
    pub fn release(&self, handle: BufferHandle) -> Result<()> {
        self.manager().release(&self.backend, handle)
    }

    pub(crate) fn transfer<R>(
        &self,
        f: impl FnOnce(&mut Transfer<'_, B>) -> Result<R>,
    ) -> Result<R> {
        let mut staging = self.lock_staging()?;
        f(&mut Transfer {
            backend: &self.backend,
            mem: &self.mem,
            staging: &mut staging,
        })
    }

    /// Writes `data` at the start of an allocation, through the staging ring.
    ///
    /// # Errors
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) if `data` is longer than the allocation; [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn upload(&self, handle: BufferHandle, data: &[u8]) -> Result<()> {
        self.transfers().upload_at(handle, 0, data)
    }

    /// Logs a transfer on the timeline, when tracing.
    pub(crate) fn traced(&self, what: EventKind, handle: BufferHandle, bytes: u64) {
        self.manager().record_transfer(what, handle, bytes);
    }

    /// Reads a whole allocation back. Waits for the device.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle); [`Error::DeviceLost`](crate::Error::DeviceLost); [`Error::HostOutOfMemory`](crate::Error::HostOutOfMemory) when the host
    /// cannot hold the result.
    pub fn download(&self, handle: BufferHandle) -> Result<Vec<u8>> {
        let size = self.observe().size_of(handle)?;
        let mut out = crate::types::host_bytes::host_buffer(size, "the result of a download")?;
        self.transfers().download_into(handle, 0, &mut out)?;
        Ok(out)
    }

    /// Submits recorded work. Returns its index.
    ///
    /// # Errors
    /// [`Error::DeviceLost`](crate::Error::DeviceLost); [`Error::Backend`](crate::Error::Backend) if the API rejected recorded work.
    pub fn submit(&self) -> Result<SubmissionIndex> {
        Ok(self.submission(self.backend.submit()?))
    }

    /// Submits recorded work and waits until the device has finished everything; then returns
    /// released memory to the pools.
    ///
    /// # Errors
    /// As [`submit`](Self::submit).
    pub fn wait(&self) -> Result<()> {
        let last = self.backend.submit()?;
        self.backend.wait(last)?;
        self.manager().collect(&self.backend)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> MemoryStats {
        self.manager().stats()
    }

    pub(crate) fn staging_slot(&self) -> u64 {
        self.staging_sizes.0
    }

    /// The staging rings, refused from inside a transfer closure of this context (the outer
    /// transfer holds them: waiting would deadlock).
    pub(crate) fn lock_staging(&self) -> Result<std::sync::MutexGuard<'_, Staging<B::Block>>> {
        crate::transfers::check_reentry(self.id)?;
        Ok(lock(&self.staging))
    }

    /// Budget bytes a first transfer will need for staging: one buffer per direction that has
    /// none yet.
    pub(crate) fn staging_to_come(&self) -> Result<u64> {
        if crate::transfers::in_closure(self.id) {
            // The outer transfer holds the rings, and made the one it uses: an upload and a
            // download at most one slot apart.
            return Ok(self.staging_sizes.0);
        }
        let s = self.lock_staging()?;
        Ok([&s.upload, &s.readback]
            .iter()
            .filter(|r| r.slots.is_empty())
            .map(|r| r.slot_size)
            .sum())
    }
}
