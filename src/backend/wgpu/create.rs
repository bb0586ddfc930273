//! Making a [`WgpuBackend`]: on a device vramkit opens ([`WgpuBackend::new`]), or on one the
//! application already has ([`WgpuBackend::from_device`]).
//!
//! Either way the backend takes the device's own limits and features and installs a
//! device-lost callback (wgpu keeps one per device, and offers no way to read the one set
//! before, so it replaces any the application set; see [`WgpuBackend::from_device`] for how to
//! keep both). vramkit's own calls run inside error scopes; only on a device it opened does it
//! install an uncaptured-error handler too.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use super::{adapter, Recorder, WgpuBackend, WgpuConfig};
use crate::types::error::Result;
use crate::types::lock;
use crate::types::{BackendLimits, DeviceInfo};

impl WgpuBackend {
    /// Opens the adapter chosen by `WGPU_BACKEND` / `WGPU_ADAPTER_NAME` / `WGPU_POWER_PREF`
    /// (or the default one), as `wgpu::util` reads them: the only environment variables the
    /// library reads. The same as [`with_config`](Self::with_config) with the default
    /// [`WgpuConfig`]: the adapter's full limits, and where it has them, the features of the
    /// f16 matmul on cooperative matrices (see `adapter.rs`).
    ///
    /// # Errors
    /// [`Error::NoAdapter`](crate::Error::NoAdapter) when no adapter (driver) is present or none
    /// matches the environment.
    pub fn new() -> Result<Self> {
        Self::with_config(WgpuConfig::default())
    }

    /// As [`new`](Self::new), set up as `config` says.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_config(config: WgpuConfig) -> Result<Self> {
        let (adapter, device, queue, cooperative) = adapter::open(config.cooperative_matrix)?;
        Ok(Self::from_parts(adapter, device, queue, cooperative, true))
    }

    /// One backend per adapter of the backends `WGPU_BACKEND` asks for (Vulkan, Metal and DX12
    /// otherwise), each with its own device, set up as `config` says; CPU adapters (lavapipe)
    /// only where there is no other. For [`DeviceSet::wgpu`](crate::devices::DeviceSet::wgpu).
    ///
    /// # Errors
    /// [`Error::NoAdapter`](crate::Error::NoAdapter) when there is no adapter or one refuses to
    /// open a device.
    pub fn all(config: WgpuConfig) -> Result<Vec<Self>> {
        Ok(adapter::open_all(config.cooperative_matrix)?
            .into_iter()
            .map(|(adapter, device, queue, cooperative)| {
                Self::from_parts(adapter, device, queue, cooperative, true)
            })
            .collect())
    }

    /// A backend on a device the application opened and keeps using: vramkit allocates from
    /// it, records on its queue, and reads its real limits and features
    /// (`device.limits()`, `device.features()`). Use it with
    /// [`Context::with_backend`](crate::Context::with_backend); bind vramkit's allocations in
    /// the application's own passes with
    /// [`Interop::wgpu_binding`](crate::interop::Interop::wgpu_binding).
    ///
    /// `device` and `queue` must come from `adapter` (wgpu gives no way to check). Unified
    /// memory needs the device opened with `MAPPABLE_PRIMARY_BUFFERS`; the f16 matmul uses
    /// cooperative matrices only where the device was opened with
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`, `SHADER_F16` and `SUBGROUP` (else its fallback).
    ///
    /// **Callbacks:** vramkit sets the device's device-lost callback (and reports a loss as
    /// [`Error::DeviceLost`](crate::Error::DeviceLost) of its next call); wgpu holds one, so it
    /// replaces any the application set before. To handle a loss yourself as well, set yours
    /// after this call: vramkit then still learns of it from wgpu's own checks. The
    /// application's uncaptured-error handler is left alone, and gets only the application's
    /// errors: vramkit's calls run inside (thread-local) error scopes and report their errors
    /// as their own results.
    ///
    /// **Polling:** vramkit polls the device (`Device::poll`) inside its calls, some of them
    /// while it holds its memory manager's lock, and wgpu runs the application's
    /// `map_async` and `on_submitted_work_done` callbacks inside such polls: those callbacks
    /// must not call into the same [`Context`](crate::Context) (nor a
    /// [`DeviceSet`](crate::devices::DeviceSet) holding it), or they wait for a lock their own
    /// thread holds. Send work to another thread from them instead.
    ///
    /// # Errors
    /// None today; a `Result` so that checks of the device can be added.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use vramkit::{backend::wgpu::WgpuBackend, wgpu, Context, ContextDesc};
    /// let instance = wgpu::Instance::default();
    /// let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    /// let (device, queue) = pollster::block_on(adapter.request_device(&Default::default()))?;
    /// let backend = WgpuBackend::from_device(adapter, device.clone(), queue.clone())?;
    /// let ctx = Context::with_backend(backend, ContextDesc::default());
    /// # Ok(()) }
    /// ```
    pub fn from_device(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> Result<Self> {
        let cooperative = if device.features().contains(adapter::COOPERATIVE_FEATURES) {
            adapter::cooperative_f16(&adapter)
        } else {
            Vec::new()
        };
        Ok(Self::from_parts(adapter, device, queue, cooperative, false))
    }

    /// The backend on an open device; `own`: vramkit opened it (and installs an
    /// uncaptured-error handler, which would replace an application's).
    fn from_parts(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
        cooperative: Vec<crate::backend::CooperativeMatrix>,
        own: bool,
    ) -> Self {
        let l = device.limits();
        let limits = BackendLimits {
            max_block_size: l.max_buffer_size,
            max_binding_size: l.max_storage_buffer_binding_size.min(l.max_buffer_size),
            offset_alignment: u64::from(l.min_storage_buffer_offset_alignment)
                .max(wgpu::MAP_ALIGNMENT),
            copy_alignment: wgpu::COPY_BUFFER_ALIGNMENT,
            max_workgroups: [l.max_compute_workgroups_per_dimension; 3],
            max_params_size: l.max_uniform_buffer_binding_size,
            max_texture_side: l.max_texture_dimension_2d,
            max_workgroup_storage: l.max_compute_workgroup_storage_size,
            max_workgroup_size: [
                l.max_compute_workgroup_size_x,
                l.max_compute_workgroup_size_y,
                l.max_compute_workgroup_size_z,
            ],
            max_invocations: l.max_compute_invocations_per_workgroup,
            texture_kernels: true,
        };
        let a = adapter.get_info();
        let info = DeviceInfo {
            api: format!("{:?}", a.backend),
            name: a.name.clone(),
            driver: format!("{} {}", a.driver, a.driver_info).trim().to_string(),
            device_type: adapter::device_type_name(a.device_type).to_string(),
        };
        let lost = Arc::new(OnceLock::new());
        let lost_cb = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            log::error!("vramkit: device lost ({reason:?}): {message}");
            // Only the first loss matters; later ones repeat it.
            let _ = lost_cb.set(format!("{reason:?}: {message}"));
        });
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        // vramkit's own calls run inside error scopes (thread-local in wgpu): on an
        // application's device, the application's handler keeps getting the application's
        // errors, and only those.
        if own {
            let sink = Arc::clone(&uncaptured);
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                log::error!("vramkit: uncaptured wgpu error: {e}");
                lock(&sink).push(e.to_string());
            }));
        }
        Self {
            adapter,
            device,
            queue,
            limits,
            info,
            recorder: Mutex::new(Recorder::new()),
            submitted: Mutex::new(VecDeque::new()),
            refused: Mutex::new(Vec::new()),
            completed: Arc::new(AtomicU64::new(0)),
            lost,
            uncaptured,
            copy_kernel: OnceLock::new(),
            sampler: OnceLock::new(),
            cooperative,
            shared: Arc::new(()),
        }
    }

    /// A second backend on this backend's device and queue: its own recorder and submissions
    /// (so its own [`Context`](crate::Context), memory manager and budget), the same device-lost
    /// and error hooks. Copies between contexts of such siblings go device to device
    /// ([`DeviceSet::copy`](crate::devices::DeviceSet::copy)); between backends of separate
    /// devices, through the host. (vramkit does not compare `wgpu::Device`s: wgpu 30's
    /// equality compares ids that two instances hand out alike.)
    pub fn on_same_device(&self) -> Self {
        Self {
            adapter: self.adapter.clone(),
            device: self.device.clone(),
            queue: self.queue.clone(),
            limits: self.limits.clone(),
            info: self.info.clone(),
            recorder: Mutex::new(Recorder::new()),
            submitted: Mutex::new(VecDeque::new()),
            refused: Mutex::new(Vec::new()),
            completed: Arc::new(AtomicU64::new(0)),
            lost: Arc::clone(&self.lost),
            uncaptured: Arc::clone(&self.uncaptured),
            copy_kernel: OnceLock::new(),
            sampler: OnceLock::new(),
            cooperative: self.cooperative.clone(),
            shared: Arc::clone(&self.shared),
        }
    }

    /// Whether `other` runs on this backend's device ([`on_same_device`](Self::on_same_device)).
    pub(super) fn shares_device(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}
