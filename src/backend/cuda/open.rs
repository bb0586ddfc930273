//! Opening a CUDA device: its attributes, limits, virtual memory support and stream.

use std::sync::OnceLock;

use cudarc::driver::result as cu;
use cudarc::driver::sys::CUdevice_attribute as Attr;

use super::driver::{self, Device};
use super::submissions::Submissions;
use super::{config, marks, unmapper, CudaBackend, CudaConfig, Stream};
use crate::backend::{DeferredError, DeviceInfo};
use crate::types::error::{Error, Result};

impl CudaBackend {
    /// How many CUDA devices there are (those `CUDA_VISIBLE_DEVICES` leaves).
    ///
    /// # Errors
    /// [`Error::NoAdapter`] when the driver is missing or too old.
    pub fn device_count() -> Result<usize> {
        Ok(usize::try_from(driver::Device::count()?).unwrap_or(0))
    }

    /// Opens CUDA device `ordinal` (0 is the first device `CUDA_VISIBLE_DEVICES` leaves).
    ///
    /// # Errors
    /// [`Error::NoAdapter`] when the driver is missing or too old, or the device does not exist.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_config(ordinal, CudaConfig::default())
    }

    /// Opens CUDA device `ordinal` set up as `config` says.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::InvalidParameter`] for a
    /// [`page_size`](CudaConfig::page_size) past [`MAX_PAGE_SIZE`](CudaConfig::MAX_PAGE_SIZE).
    pub fn with_config(ordinal: usize, config: CudaConfig) -> Result<Self> {
        if config.page_size > CudaConfig::MAX_PAGE_SIZE {
            return Err(Error::InvalidParameter {
                name: "page_size",
                value: config.page_size.to_string(),
                reason: "a segment's page is at most CudaConfig::MAX_PAGE_SIZE (1 GiB); give 0 \
                         for the device's granularity, or a few MiB",
            });
        }
        let ordinal = i32::try_from(ordinal).map_err(|_| Error::NoAdapter {
            reason: format!("CUDA device {ordinal} does not exist"),
        })?;
        let device = Device::open(ordinal)?;
        let name =
            cu::device::get_name(device.dev).map_err(|e| driver::error("cuDeviceGetName", e))?;
        let major = device.attribute(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = device.attribute(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let integrated = device.attribute(Attr::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0;
        // Static `__shared__` arrays (the twins declare no dynamic shared memory).
        let shared = device.attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?;
        let managed = device.attribute(Attr::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0;
        let concurrent_managed =
            device.attribute(Attr::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? != 0;
        // SAFETY: `dev` is a valid device.
        let total = unsafe { cu::device::total_mem(device.dev) }
            .map_err(|e| driver::error("cuDeviceTotalMem", e))? as u64;
        let vmm = (config.segments
            && device.attribute(Attr::CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED)?
                != 0)
            .then(|| Self::probe_vmm(device.dev, total, &config))
            .flatten();
        let stream = cu::stream::create(cu::stream::StreamKind::NonBlocking)
            .map_err(|e| driver::error("cuStreamCreate", e))?;
        let v = device.driver_version;
        let info = DeviceInfo {
            api: "CUDA".into(),
            name,
            driver: format!(
                "CUDA driver {}.{}, sm_{major}{minor}",
                v / 1000,
                v % 1000 / 10
            ),
            device_type: if integrated { "integrated" } else { "discrete" }.into(),
        };
        let unmapper = (config.background_unmap && vmm.is_some())
            .then(|| unmapper::Unmapper::new(device.ctx, stream, ordinal));
        Ok(Self {
            blas: OnceLock::new(),
            vendor_blas: config.vendor_blas,
            stream: Stream(stream),
            subs: std::sync::Mutex::new(Submissions::default()),
            marks: std::sync::Mutex::new(marks::Marks::default()),
            lost: OnceLock::new(),
            deferred: DeferredError::default(),
            limits: config::limits(total, shared),
            info,
            compute_capability: major * 10 + minor,
            concurrent_managed,
            managed,
            vmm,
            peers: std::sync::Mutex::new(Vec::new()),
            unmapper,
            device,
        })
    }
}
