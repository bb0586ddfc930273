//! Choosing the adapter and opening the device.
//!
//! `WGPU_BACKEND` (e.g. `vulkan`) restricts the APIs tried, `WGPU_ADAPTER_NAME` picks an adapter
//! by a part of its name (e.g. `llvmpipe`), `WGPU_POWER_PREF` chooses between several. The chosen
//! adapter is checked against the asked-for backend: wgpu would otherwise fall back silently.
//!
//! Where the adapter lists a 16×16×16 f16×f16→f32 cooperative matrix (NVIDIA's tensor cores
//! through `VK_KHR_cooperative_matrix`), the device is opened with wgpu's experimental
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` (plus `SHADER_F16` and `SUBGROUP`) for the f16 matmul; see
//! the safety argument in [`open_device`]. `DebugSettings::no_cooperative_matrix` opens it without.
//! [`open_all`] opens every adapter instead (for `DeviceSet::wgpu`). Both open one thread at a
//! time in the process ([`OPENING`]): a driver hung with several threads opening at once.
//! These variables are the only ones the library reads (the adapter choice, as `wgpu::util`);
//! debug settings travel in `ContextDesc::debug`.

use crate::types::error::{Error, Result};
use crate::types::{CooperativeMatrix, CooperativeScalar};

/// Held while an instance is made and its adapters and devices are opened: one thread at a
/// time in the process. NVIDIA's Vulkan driver (580, H200) hung with four threads opening
/// devices at once (one thread waiting on a driver lock, the others on futexes), seen as a
/// test binary stuck with four test threads. Only opening is serialised: devices are dropped
/// (and other devices used) freely meanwhile, which ran 50 of 50 times with four test
/// threads opening, using and dropping devices at once.
static OPENING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How [`WgpuBackend::with_config`](super::WgpuBackend::with_config) opens the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgpuConfig {
    /// Open the device with wgpu's experimental `EXPERIMENTAL_COOPERATIVE_MATRIX` where the
    /// adapter has the configuration vramkit's f16 matmul uses (default). `false` opens it with
    /// no experimental feature ([`DebugSettings::no_cooperative_matrix`](crate::DebugSettings)
    /// sets it through [`Context::new`](crate::Context::new)).
    pub cooperative_matrix: bool,
}

impl Default for WgpuConfig {
    fn default() -> Self {
        Self {
            cooperative_matrix: true,
        }
    }
}

/// An opened device: its adapter, device, queue and the cooperative-matrix configurations it
/// was opened with.
pub(super) type Opened = (
    wgpu::Adapter,
    wgpu::Device,
    wgpu::Queue,
    Vec<CooperativeMatrix>,
);

/// The instance and adapters of the backends `WGPU_BACKEND` asks for (`default` otherwise).
fn adapters(
    default: wgpu::Backends,
) -> Result<(wgpu::Instance, Vec<wgpu::Adapter>, wgpu::Backends)> {
    let backends = wgpu::Backends::from_env().unwrap_or(default);
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        flags: wgpu::InstanceFlags::from_build_config().with_env(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    if adapters.is_empty() {
        return Err(Error::NoAdapter {
            reason: format!(
                "no adapter for backends {backends:?}: install a GPU driver, or Mesa's lavapipe \
                 (`apt-get install mesa-vulkan-drivers libvulkan1`), or unset WGPU_BACKEND"
            ),
        });
    }
    Ok((instance, adapters, backends))
}

/// Opens every adapter of the backends `WGPU_BACKEND` asks for (the primary ones otherwise:
/// Vulkan, Metal, DX12), CPU adapters only where there is no other, a GPU that two backends list
/// once: one device each.
pub(super) fn open_all(cooperative: bool) -> Result<Vec<Opened>> {
    let _one_at_a_time = crate::types::lock(&OPENING);
    let (_instance, adapters, _) = adapters(wgpu::Backends::PRIMARY)?;
    let any_gpu = adapters
        .iter()
        .any(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    // One GPU listed by two backends (Vulkan and DX12 on Windows) is opened once: the first
    // backend that lists it, by PCI bus id where the driver reports one (identical GPUs of one
    // host share vendor, device id and name; their bus ids differ).
    let mut seen = Vec::new();
    adapters
        .into_iter()
        .filter(|a| !any_gpu || a.get_info().device_type != wgpu::DeviceType::Cpu)
        .filter(|a| {
            let bus = a.get_info().device_pci_bus_id;
            let fresh = bus.is_empty() || !seen.contains(&bus);
            seen.push(bus);
            fresh
        })
        .map(|a| open_device(a, cooperative))
        .collect()
}

/// Opens the adapter and device named by the environment (or the default one), with
/// cooperative matrices where the adapter has them and `cooperative` allows them.
pub(super) fn open(cooperative: bool) -> Result<Opened> {
    let _one_at_a_time = crate::types::lock(&OPENING);
    let (instance, adapters, backends) = adapters(wgpu::Backends::all())?;
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
    open_device(adapter, cooperative)
}

/// Opens a device on `adapter` with its full limits and, where it has them and `cooperative`
/// allows them, the features of the f16 matmul on cooperative matrices.
fn open_device(adapter: wgpu::Adapter, cooperative: bool) -> Result<Opened> {
    let info = adapter.get_info();
    log::info!(
        "vramkit: adapter `{}` on {:?} ({:?}, driver {} {})",
        info.name,
        info.backend,
        info.device_type,
        info.driver,
        info.driver_info
    );
    let mut required_features = adapter.features() & wgpu::Features::MAPPABLE_PRIMARY_BUFFERS;
    let coop = if cooperative {
        cooperative_f16(&adapter)
    } else {
        Vec::new()
    };
    if !coop.is_empty() {
        required_features |= COOPERATIVE_FEATURES;
    }
    let desc = wgpu::DeviceDescriptor {
        label: Some("vramkit"),
        required_features,
        required_limits: adapter.limits(),
        memory_hints: wgpu::MemoryHints::Performance,
        experimental_features: if coop.is_empty() {
            wgpu::ExperimentalFeatures::disabled()
        } else {
            // SAFETY: the token is wgpu's way of saying that its experimental features may
            // have bugs that safe calls reach. Only EXPERIMENTAL_COOPERATIVE_MATRIX is asked
            // for, and only kernels made `unchecked` may use it: the backend refuses any other
            // kernel that enables `wgpu_cooperative_matrix` (`kernel::compile`; naga's bounds
            // checks would not cover a whole tile), and `KernelSource::unchecked` and
            // `Context::dispatch_unchecked` make their callers promise what the feature needs:
            // configurations the driver lists, subgroups of exactly 32, uniform control flow
            // around every cooperative operation, workgroup-memory pointers 16-byte aligned
            // with 16-byte-multiple strides, and tiles inside their bindings. vramkit's own f16
            // matmul (shaders/matmul_f16_coop.wgsl) is launched solely by
            // `kernels::matmul_typed` after it has checked every size; none of its indices
            // depends on data it loads, so a wgpu or driver bug in the experimental path (e.g.
            // workgroup-memory ordering under the Vulkan memory model, which naga switches such
            // modules to) could give wrong values, which the tests would catch, but not an
            // access outside its bindings. No other kernel's SPIR-V changes (naga adds the
            // capability only to modules that use cooperative types). The tests run the kernel against the f64 twin on the device that
            // enables it. Code that takes the wgpu device (`WgpuBackend::device`) and builds
            // its own cooperative kernels is on wgpu's terms;
            // `DebugSettings::no_cooperative_matrix` opens the device without the feature.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        },
        ..Default::default()
    };
    let (device, queue) =
        pollster::block_on(adapter.request_device(&desc)).map_err(|e| Error::NoAdapter {
            reason: format!("adapter `{}` refused to open a device: {e}", info.name),
        })?;
    if !coop.is_empty() {
        log::info!("vramkit: cooperative matrices enabled for f16 matmul: {coop:?}");
    }
    Ok((adapter, device, queue, coop))
}

/// The device features vramkit's f16 matmul on cooperative matrices needs.
pub(super) const COOPERATIVE_FEATURES: wgpu::Features =
    wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        .union(wgpu::Features::SHADER_F16)
        .union(wgpu::Features::SUBGROUP);

/// The cooperative-matrix configurations vramkit's f16 matmul can use on `adapter`: 16×16×16,
/// f16 A and B, f32 C, where the adapter offers `EXPERIMENTAL_COOPERATIVE_MATRIX`,
/// `SHADER_F16` and `SUBGROUP` and its subgroups are exactly 32 wide; empty otherwise (lavapipe
/// has none).
pub(super) fn cooperative_f16(adapter: &wgpu::Adapter) -> Vec<CooperativeMatrix> {
    let info = adapter.get_info();
    if !adapter.features().contains(COOPERATIVE_FEATURES)
        || info.subgroup_min_size != 32
        || info.subgroup_max_size != 32
    {
        return Vec::new();
    }
    let all = adapter.cooperative_matrix_properties();
    log::info!("vramkit: the adapter's cooperative matrices: {all:?}");
    all.into_iter()
        .filter(is_f16_16x16)
        .map(|p| CooperativeMatrix {
            m: p.m_size,
            n: p.n_size,
            k: p.k_size,
            inputs: CooperativeScalar::F16,
            accumulator: CooperativeScalar::F32,
        })
        .collect()
}

/// Whether `p` is the configuration of shaders/matmul_f16_coop.wgsl.
fn is_f16_16x16(p: &wgpu::CooperativeMatrixProperties) -> bool {
    (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
        && p.ab_type == wgpu::CooperativeScalarType::F16
        && p.cr_type == wgpu::CooperativeScalarType::F32
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
