//! The application of the interop tests: its own instance, adapter, device, queue and compute
//! pipeline, made with wgpu alone, as an outside crate would.
#![allow(dead_code)] // each test file uses its own part

use vramkit::wgpu;

/// Doubles every f32 of its one binding.
pub const DOUBLE: &str = r"
@group(0) @binding(0) var<storage, read_write> data: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&data)) {
        data[id.x] = data[id.x] * 2.0;
    }
}
";

/// The app's own device, or `None` (printed) where there is no Vulkan adapter.
pub fn app_device(test: &str) -> Option<(wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    // NVIDIA's Vulkan driver (580) can deadlock when several threads open devices at once: an
    // app with several threads opens its devices one at a time, as vramkit does.
    static OPENING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = OPENING.lock().unwrap_or_else(|e| e.into_inner());
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
        Ok(name) => adapters.into_iter().find(|a| {
            a.get_info()
                .name
                .to_lowercase()
                .contains(&name.to_lowercase())
        }),
        Err(_) => pollster::block_on(instance.request_adapter(&Default::default())).ok(),
    };
    let Some(adapter) = adapter else {
        assert!(
            !std::env::var("VRAMKIT_REQUIRE_GPU").is_ok_and(|v| v == "1"),
            "{test}: VRAMKIT_REQUIRE_GPU=1 but there is no Vulkan adapter"
        );
        eprintln!("SKIPPED {test}: no Vulkan adapter; set VRAMKIT_REQUIRE_GPU=1 to fail instead");
        return None;
    };
    eprintln!("{test}: the app's adapter `{}`", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("the app's device"),
        ..Default::default()
    }))
    .expect("the adapter opens a device");
    Some((adapter, device, queue))
}

/// The app's pipeline that maps every f32 of its one binding by `op` (of `x`).
pub fn app_pipeline(device: &wgpu::Device, op: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("double"),
        source: wgpu::ShaderSource::Wgsl(DOUBLE.replace("data[id.x] * 2.0", op).into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("double"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}

pub fn floats(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|i| seed + i as f32 * 0.25 - 100.0).collect()
}

pub fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn floats_of(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
