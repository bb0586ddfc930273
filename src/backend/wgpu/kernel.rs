//! Compiling WGSL kernels and binding their buffers.

use std::num::NonZeroU64;

use wgpu::util::DeviceExt;

use super::{WgpuBackend, WgpuBlock};
use crate::backend::{BlockRange, Constants, KernelSource};
use crate::types::error::{Error, Result};

/// A compiled compute pipeline.
#[derive(Debug)]
pub struct WgpuKernel {
    pub(super) label: String,
    pub(super) pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

pub(super) fn compile(
    backend: &WgpuBackend,
    source: &KernelSource,
    constants: Constants<'_>,
) -> Result<WgpuKernel> {
    log::debug!(
        "vramkit: building pipeline `{}` {constants:?}",
        source.label()
    );
    let started = std::time::Instant::now();
    // naga's bounds checks cover a cooperative load's or store's first element, not its whole
    // tile: a safe launch could reach past its bindings through one. Only kernels made
    // `unchecked`, whose launchers promise to keep every tile inside its binding
    // (`Context::dispatch_unchecked`), may use cooperative matrices (naga accepts `coop_mat`
    // types only after `enable wgpu_cooperative_matrix;`).
    if !source.is_unchecked() && source.wgsl().contains("wgpu_cooperative_matrix") {
        return Err(Error::Unsupported {
            what: format!("cooperative matrices in kernel `{}`", source.label()),
            reason: "runtime bounds checks do not cover cooperative loads and stores, so \
                     kernels run by Context::dispatch may not use them; make the kernel \
                     KernelSource::unchecked and launch it with Context::dispatch_unchecked, \
                     or use kernels::matmul_typed"
                .into(),
        });
    }
    let guarded = source.is_unchecked();
    let wgsl = if guarded {
        guarded_wgsl(source.wgsl()).into()
    } else {
        source.wgsl().into()
    };
    let (pipeline, error) = backend.scoped(|| {
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(source.label()),
            source: wgpu::ShaderSource::Wgsl(wgsl),
        };
        let module = if source.is_unchecked() {
            // SAFETY: unchecked kernels are launched only with params their callers checked
            // (`Compute::dispatch`'s promise 2, `Context::dispatch_unchecked`'s `# Safety`): every
            // index in range, no integer division by zero or overflow, loops that end, so the
            // runtime checks this skips could never trigger.
            unsafe {
                backend
                    .device
                    .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            }
        } else {
            backend.device.create_shader_module(desc)
        };
        backend
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(source.label()),
                layout: None,
                module: &module,
                entry_point: Some(source.entry()),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    // vramkit's kernels write the workgroup memory they read first
                    // (`KernelSource::unchecked`'s promise).
                    zero_initialize_workgroup_memory: !guarded,
                },
                cache: None,
            })
    });
    if let Some(e) = error {
        backend.check_lost()?;
        return Err(Error::Shader {
            label: source.label().into(),
            message: e.to_string(),
        });
    }
    let layout = pipeline.get_bind_group_layout(0);
    log::debug!(
        "vramkit: pipeline `{}` built in {:.1} ms",
        source.label(),
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(WgpuKernel {
        label: source.label().into(),
        pipeline,
        layout,
    })
}

/// A guarded kernel's WGSL with an override constant added. wgpu-hal's Vulkan backend turns a
/// module without overrides into SPIR-V when the module is created, honouring only the bounds
/// checks of `ShaderRuntimeChecks::unchecked()`: naga then still bounds every loop with a
/// counter (`force_loop_bounding`) and guards integer divisions, which cost the tiled matmul
/// 10× on the H200 (its accumulators left registers). A module with an override is compiled
/// per pipeline, with every check the descriptor turns off left out.
fn guarded_wgsl(wgsl: &str) -> String {
    format!("{wgsl}\n// Compiled per pipeline (see vramkit's backend/wgpu/kernel.rs).\noverride {GUARDED_OVERRIDE}: bool = true;\n")
}

/// The override `guarded_wgsl` adds.
const GUARDED_OVERRIDE: &str = "vramkit_guarded_build";

pub(super) fn bind_group(
    device: &wgpu::Device,
    kernel: &WgpuKernel,
    bindings: &[BlockRange<'_, WgpuBlock>],
    params: &[u8],
) -> wgpu::BindGroup {
    let uniform = params_buffer(device, params);
    let resources = bindings.iter().map(buffer_resource).collect();
    create_bind_group(device, kernel, resources, uniform.as_ref())
}

/// The params uniform, its size padded to 16 bytes; `None` for no params.
pub(super) fn params_buffer(device: &wgpu::Device, params: &[u8]) -> Option<wgpu::Buffer> {
    (!params.is_empty()).then(|| {
        let mut padded = params.to_vec();
        padded.resize(params.len().next_multiple_of(16), 0);
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("vramkit params"),
            contents: &padded,
            usage: wgpu::BufferUsages::UNIFORM,
        })
    })
}

/// A block range as a storage-buffer binding.
pub(super) fn buffer_resource<'a>(b: &BlockRange<'a, WgpuBlock>) -> wgpu::BindingResource<'a> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer: &b.block.buffer,
        offset: b.offset,
        size: NonZeroU64::new(b.size),
    })
}

/// The bind group of `resources` at bindings `0..n` and the params uniform at `n`.
pub(super) fn create_bind_group(
    device: &wgpu::Device,
    kernel: &WgpuKernel,
    resources: Vec<wgpu::BindingResource<'_>>,
    uniform: Option<&wgpu::Buffer>,
) -> wgpu::BindGroup {
    let n = resources.len() as u32;
    let mut entries: Vec<wgpu::BindGroupEntry<'_>> = resources
        .into_iter()
        .zip(0u32..)
        .map(|(resource, binding)| wgpu::BindGroupEntry { binding, resource })
        .collect();
    if let Some(u) = uniform {
        entries.push(wgpu::BindGroupEntry {
            binding: n,
            resource: u.as_entire_binding(),
        });
    }
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(&kernel.label),
        layout: &kernel.layout,
        entries: &entries,
    })
}

#[cfg(test)]
mod tests {
    use super::{guarded_wgsl, GUARDED_OVERRIDE};

    /// The override survives naga's front end, so wgpu-hal takes its per-pipeline path.
    #[test]
    fn guarded_modules_have_an_override() {
        // The kernels of vramkit-kernels run through the same override on every launch of
        // their tests; here the one the backend carries itself.
        for kernel in [&crate::backend::BUFFER_COPY] {
            if !kernel.is_unchecked() {
                continue;
            }
            let module = naga::front::wgsl::parse_str(&guarded_wgsl(kernel.wgsl()))
                .unwrap_or_else(|e| panic!("{}: {e}", kernel.label()));
            assert!(
                module
                    .overrides
                    .iter()
                    .any(|(_, o)| o.name.as_deref() == Some(GUARDED_OVERRIDE)),
                "{}",
                kernel.label()
            );
        }
    }
}
