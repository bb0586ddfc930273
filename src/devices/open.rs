//! Opening every device of the host into a [`DeviceSet`]: every wgpu adapter, or every CUDA
//! device, one context each with the same description (so the same per-device budget).

use super::DeviceSet;
#[cfg(feature = "wgpu")]
use crate::backend::wgpu::{WgpuBackend, WgpuConfig};
use crate::types::error::Result;
use crate::{Context, ContextDesc};

#[cfg(feature = "wgpu")]
impl DeviceSet<WgpuBackend> {
    /// A context on every adapter of the backends `WGPU_BACKEND` asks for (Vulkan, Metal and
    /// DX12 otherwise; CPU adapters such as lavapipe only where there is no other; a GPU that
    /// two backends list, once; `WGPU_ADAPTER_NAME` and `WGPU_POWER_PREF` do not apply), each with
    /// `desc` (its budget is per device), and `total_budget` over the set. See
    /// [`WgpuBackend::all`].
    ///
    /// # Errors
    /// [`Error::NoAdapter`](crate::Error::NoAdapter) when there is no adapter or one refuses to
    /// open a device.
    pub fn wgpu(desc: ContextDesc, total_budget: Option<u64>) -> Result<Self> {
        let config = WgpuConfig {
            cooperative_matrix: !desc.debug.no_cooperative_matrix,
        };
        let contexts = WgpuBackend::all(config)?
            .into_iter()
            .map(|backend| Context::with_backend(backend, desc.clone()))
            .collect();
        Self::from_contexts(contexts, total_budget)
    }
}

#[cfg(feature = "cuda")]
impl DeviceSet<crate::backend::cuda::CudaBackend> {
    /// A context on every CUDA device (those `CUDA_VISIBLE_DEVICES` leaves), each with `desc`
    /// (its budget is per device), and `total_budget` over the set.
    ///
    /// # Errors
    /// [`Error::NoAdapter`](crate::Error::NoAdapter) when the driver is missing or too old,
    /// there is no device (the driver does not start then), or a device fails to open.
    pub fn cuda(desc: ContextDesc, total_budget: Option<u64>) -> Result<Self> {
        let n = crate::backend::cuda::CudaBackend::device_count()?;
        let contexts = (0..n)
            .map(|i| Context::cuda(i, desc.clone()))
            .collect::<Result<Vec<_>>>()?;
        Self::from_contexts(contexts, total_budget)
    }
}
