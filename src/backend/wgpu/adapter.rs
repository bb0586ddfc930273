//! Choosing the adapter and opening the device.
//!
//! `WGPU_BACKEND` (e.g. `vulkan`) restricts the APIs tried, `WGPU_ADAPTER_NAME` picks an adapter
//! by a part of its name (e.g. `llvmpipe`), `WGPU_POWER_PREF` chooses between several. The chosen
//! adapter is checked against the asked-for backend: wgpu would otherwise fall back silently.

use crate::error::{Error, Result};

/// Opens the adapter and device named by the environment (or the default one).
pub(super) fn open() -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    let wanted = wgpu::Backends::from_env();
    let backends = wanted.unwrap_or(wgpu::Backends::all());
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        flags: wgpu::InstanceFlags::from_build_config().with_env(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    let names = || {
        adapters
            .iter()
            .map(|a| {
                let i = a.get_info();
                format!("`{}` ({:?})", i.name, i.backend)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if adapters.is_empty() {
        return Err(Error::NoAdapter {
            reason: format!(
                "no adapter for backends {backends:?}: install a GPU driver, or Mesa's lavapipe \
                 (`apt-get install mesa-vulkan-drivers libvulkan1`), or unset WGPU_BACKEND"
            ),
        });
    }
    let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
        Ok(name) => {
            let needle = name.to_lowercase();
            adapters
                .iter()
                .find(|a| a.get_info().name.to_lowercase().contains(&needle))
                .cloned()
                .ok_or_else(|| Error::NoAdapter {
                    reason: format!(
                        "WGPU_ADAPTER_NAME=`{name}` matches none of the adapters: {}",
                        names()
                    ),
                })?
        }
        Err(_) => {
            let options = wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::from_env()
                    .unwrap_or(wgpu::PowerPreference::HighPerformance),
                ..Default::default()
            };
            match pollster::block_on(instance.request_adapter(&options)) {
                Ok(adapter) => adapter,
                Err(_) => adapters[0].clone(),
            }
        }
    };
    let info = adapter.get_info();
    if !backends.contains(wgpu::Backends::from(info.backend)) {
        return Err(Error::NoAdapter {
            reason: format!(
                "asked for {backends:?} but wgpu offered `{}` on {:?}",
                info.name, info.backend
            ),
        });
    }
    log::info!(
        "vramkit: adapter `{}` on {:?} ({:?}, driver {} {})",
        info.name,
        info.backend,
        info.device_type,
        info.driver,
        info.driver_info
    );

    let required_features = adapter.features() & wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
    let desc = wgpu::DeviceDescriptor {
        label: Some("vramkit"),
        required_features,
        required_limits: adapter.limits(),
        memory_hints: wgpu::MemoryHints::Performance,
        ..Default::default()
    };
    let (device, queue) =
        pollster::block_on(adapter.request_device(&desc)).map_err(|e| Error::NoAdapter {
            reason: format!("adapter `{}` refused to open a device: {e}", info.name),
        })?;
    Ok((adapter, device, queue))
}

/// The words vramkit uses for a wgpu device type.
pub(super) fn device_type_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::Cpu => "cpu",
        wgpu::DeviceType::DiscreteGpu => "discrete",
        wgpu::DeviceType::IntegratedGpu => "integrated",
        wgpu::DeviceType::VirtualGpu => "virtual",
        wgpu::DeviceType::Other => "other",
    }
}
