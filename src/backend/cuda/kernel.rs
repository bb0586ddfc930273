//! Compiling the CUDA C twins with NVRTC (loaded at run time) and launching them.

use std::ffi::{c_void, CString};

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;
use cudarc::nvrtc;

use super::{kernel_cache, CudaBackend, CudaBlock};
use crate::backend::{BlockRange, Constants, KernelSource};
use crate::types::error::{Error, Result};

/// A kernel compiled by NVRTC and loaded into the context. Modules stay loaded for the life of
/// the context (the context caches every kernel it builds).
#[derive(Debug)]
pub struct CudaKernel {
    label: String,
    function: sys::CUfunction,
    /// Threads per block: the WGSL workgroup size, override constants applied.
    block: [u32; 3],
}

// SAFETY: a CUfunction handle is valid on any thread where its context is current, and the
// backend binds the context before every launch.
unsafe impl Send for CudaKernel {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for CudaKernel {}

fn shader_error(source: &KernelSource, message: String) -> Error {
    Error::Shader {
        label: source.label().into(),
        message,
    }
}

/// Override constants that took their WGSL defaults, by name.
type Defaults = Vec<(String, f64)>;

/// The workgroup size of the WGSL entry point, which the CUDA twin runs as its block size (the
/// dispatch functions count workgroups in those units), and the overrides sizing it that took
/// their WGSL defaults (the twin gets them as `-D` flags too, as it gets the given ones).
fn workgroup_size(source: &KernelSource, constants: Constants<'_>) -> Result<([u32; 3], Defaults)> {
    let module = naga::front::wgsl::parse_str(source.wgsl())
        .map_err(|e| shader_error(source, e.emit_to_string(source.wgsl())))?;
    let entry = module
        .entry_points
        .iter()
        .find(|e| e.name == source.entry())
        .ok_or_else(|| shader_error(source, format!("no entry point `{}`", source.entry())))?;
    let mut size = entry.workgroup_size;
    let mut defaulted = Vec::new();
    let Some(overrides) = &entry.workgroup_size_overrides else {
        return Ok((size, defaulted));
    };
    for (dim, expr) in size.iter_mut().zip(overrides) {
        let Some(expr) = expr else { continue };
        let naga::Expression::Override(o) = module.global_expressions[*expr] else {
            return Err(shader_error(
                source,
                "a workgroup size must be a literal or an override constant".into(),
            ));
        };
        let o = &module.overrides[o];
        let name = o.name.as_deref().unwrap_or_default();
        let given = constants.iter().find(|(n, _)| *n == name).map(|&(_, v)| v);
        let default = o.init.and_then(|i| match module.global_expressions[i] {
            naga::Expression::Literal(naga::Literal::U32(v)) => Some(f64::from(v)),
            naga::Expression::Literal(naga::Literal::AbstractInt(v)) => Some(v as f64),
            _ => None,
        });
        let value = given.or(default).ok_or_else(|| {
            shader_error(
                source,
                format!("override `{name}` sizes the workgroup: give a value"),
            )
        })?;
        if given.is_none() {
            defaulted.push((name.to_string(), value));
        }
        *dim = value as u32;
    }
    Ok((size, defaulted))
}

/// `-D` flags for the override constants: integers as integers, others as float literals.
fn defines<'a>(constants: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<String> {
    constants
        .into_iter()
        .map(|(name, v)| {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("-D{name}={}", v as i64)
            } else {
                format!("-D{name}={v:e}f")
            }
        })
        .collect()
}

pub(super) fn compile(
    backend: &CudaBackend,
    source: &KernelSource,
    constants: Constants<'_>,
) -> Result<CudaKernel> {
    if source.cuda().is_empty() {
        return Err(Error::Unsupported {
            what: format!("kernel `{}` on CUDA", source.label()),
            reason: "it has no CUDA C twin: add one with `KernelSource::with_cuda`".into(),
        });
    }
    let (block, defaulted) = workgroup_size(source, constants)?;
    let mut options = defines(constants.iter().copied());
    options.extend(defines(defaulted.iter().map(|(n, v)| (n.as_str(), *v))));
    if !source.is_unchecked() {
        options.push("-DVRAMKIT_CHECKED".into());
    }
    // A source with several kernels compiles only this one where it guards them (`with_cuda`).
    options.push(format!("-DVRAMKIT_ENTRY_{}", source.entry()));
    options.push(format!(
        "--gpu-architecture=compute_{}",
        backend.compute_capability
    ));
    options.push("--std=c++17".into());
    let made = |function| CudaKernel {
        label: source.label().into(),
        function,
        block,
    };
    let started = std::time::Instant::now();
    let cache = kernel_cache::dir_from_env().map(|dir| {
        let key = kernel_cache::key(source.cuda(), &options, backend.device.driver_version);
        (dir, key)
    });
    if let Some((dir, key)) = &cache {
        if let Some(ptx) = kernel_cache::load(dir, key) {
            match load_function(backend, source, &ptx) {
                Ok(function) => {
                    log::debug!(
                        "vramkit: `{}` built in {:.1} ms from the kernel cache (no NVRTC)",
                        source.label(),
                        started.elapsed().as_secs_f64() * 1e3
                    );
                    return Ok(made(function));
                }
                // The device failed, or could not take the module now: the entry is not to
                // blame.
                Err(LoadFailure::Device(e)) => return Err(e),
                Err(LoadFailure::Refused(e)) => {
                    log::debug!(
                        "vramkit: kept PTX of `{}` refused ({e}): compiling",
                        source.label()
                    );
                    kernel_cache::forget(dir, key);
                }
            }
        }
    }
    log::debug!("vramkit: NVRTC `{}` {constants:?}", source.label());
    let ptx = nvrtc_ptx(source, options)?;
    let compiled = started.elapsed();
    let function = load_function(backend, source, &ptx).map_err(Error::from)?;
    if let Some((dir, key)) = &cache {
        kernel_cache::store(dir, key, &ptx);
    }
    let total = started.elapsed();
    log::debug!(
        "vramkit: `{}` built in {:.1} ms: NVRTC {:.1} ms, module load (the driver's compile \
         of the PTX, or its cache) {:.1} ms",
        source.label(),
        total.as_secs_f64() * 1e3,
        compiled.as_secs_f64() * 1e3,
        total.saturating_sub(compiled).as_secs_f64() * 1e3
    );
    Ok(made(function))
}

/// NVRTC's PTX for `source` with `options`.
fn nvrtc_ptx(source: &KernelSource, options: Vec<String>) -> Result<String> {
    // SAFETY: only tries to dlopen NVRTC by its known names.
    if !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(Error::Unsupported {
            what: format!("compiling `{}` for CUDA", source.label()),
            reason: "NVRTC (libnvrtc.so) was not found: install the CUDA toolkit's NVRTC or add \
                     its directory to LD_LIBRARY_PATH"
                .into(),
        });
    }
    let opts = nvrtc::CompileOptions {
        options,
        name: Some(format!(
            "{}.cu",
            source.label().replace([' ', ':', '>', '('], "_")
        )),
        ..Default::default()
    };
    let ptx = std::panic::catch_unwind(|| nvrtc::compile_ptx_with_opts(source.cuda(), opts))
        .map_err(|_| Error::Unsupported {
            what: format!("compiling `{}` for CUDA", source.label()),
            reason: "the NVRTC library lacks entry points vramkit needs: install NVRTC 13".into(),
        })?
        .map_err(|e| match e {
            nvrtc::CompileError::CompileError { log, .. } => {
                shader_error(source, log.to_string_lossy().into_owned())
            }
            other => shader_error(source, format!("NVRTC failed: {other:?}")),
        })?;
    Ok(ptx.to_src())
}

/// Why a PTX image gave no function.
enum LoadFailure {
    /// The driver refused the PTX, or found no entry point in it: another PTX may do.
    Refused(Error),
    /// The context failed, or the driver could not take the module now: any PTX would fail.
    Device(Error),
}

impl From<LoadFailure> for Error {
    fn from(f: LoadFailure) -> Self {
        match f {
            LoadFailure::Refused(e) | LoadFailure::Device(e) => e,
        }
    }
}

/// Whether the driver's refusal is about the image itself.
fn image_refused(e: DriverError) -> bool {
    use sys::CUresult::*;
    matches!(
        e.0,
        CUDA_ERROR_INVALID_PTX
            | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUDA_ERROR_INVALID_IMAGE
            | CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUDA_ERROR_NOT_FOUND
    )
}

/// Loads `ptx` into the backend's context and finds the entry point.
fn load_function(
    backend: &CudaBackend,
    source: &KernelSource,
    ptx: &str,
) -> std::result::Result<sys::CUfunction, LoadFailure> {
    let image = CString::new(ptx)
        .map_err(|_| LoadFailure::Refused(shader_error(source, "the PTX has a NUL byte".into())))?;
    let entry = CString::new(source.entry()).map_err(|_| {
        LoadFailure::Refused(shader_error(
            source,
            "the entry point name has a NUL byte".into(),
        ))
    })?;
    backend.device.bind().map_err(LoadFailure::Device)?;
    // SAFETY: `image` is NUL-terminated PTX and outlives the call.
    let module = unsafe { cu::module::load_data(image.as_ptr().cast()) }.map_err(|e| {
        let error = backend.fail("cuModuleLoadData", e);
        if image_refused(e) {
            LoadFailure::Refused(error)
        } else {
            LoadFailure::Device(error)
        }
    })?;
    // SAFETY: `module` was just loaded; `entry` is NUL-terminated.
    unsafe { cu::module::get_function(module, entry) }.map_err(|e| {
        // SAFETY: the module was loaded above, and nothing of it is used: it is unloaded once.
        let _ = unsafe { cu::module::unload(module) };
        if !image_refused(e) {
            return LoadFailure::Device(backend.fail("cuModuleGetFunction", e));
        }
        LoadFailure::Refused(shader_error(
            source,
            format!(
                "no `extern \"C\"` function `{}` in the CUDA twin ({})",
                source.entry(),
                super::driver::describe(e)
            ),
        ))
    })
}

pub(super) fn launch(
    backend: &CudaBackend,
    kernel: &CudaKernel,
    bindings: &[BlockRange<'_, CudaBlock>],
    params: &[u8],
    workgroups: [u32; 3],
) -> Result<()> {
    // One argument per binding: its pointer, or with `VRAMKIT_CHECKED` a `checked_buf` of its
    // pointer and its length in bytes (common.cuh).
    let mut pointers: Vec<[u64; 2]> = bindings
        .iter()
        .map(|b| [b.block.ptr + b.offset, b.size])
        .collect();
    // The params struct is passed by value; the driver copies as many bytes as the kernel's
    // parameter has, at most the 16-byte-padded length (as for a WGSL uniform).
    let mut words = vec![0u32; params.len().div_ceil(16) * 4];
    bytemuck::cast_slice_mut::<u32, u8>(&mut words)[..params.len()].copy_from_slice(params);
    let mut args: Vec<*mut c_void> = pointers.iter_mut().map(|p| p.as_mut_ptr().cast()).collect();
    if !params.is_empty() {
        args.push(words.as_mut_ptr().cast());
    }
    let [gx, gy, gz] = workgroups;
    let [bx, by, bz] = kernel.block;
    log::trace!("vramkit: launch `{}` {workgroups:?}", kernel.label);
    // SAFETY: the function takes one `BUF(T)` per binding and the params struct (the contract of
    // `KernelSource::with_cuda`): a pointer, read from the first word of each pair, or when
    // built with VRAMKIT_CHECKED a pointer and length, read from both. Every range lies inside
    // a live block (the caller's promise); a checked build clamps every index into its range,
    // and an unchecked one runs only with params its validating function checked (the
    // caller's promise). `args` and what it points to outlive the call (the driver copies the
    // values at launch).
    unsafe {
        cu::launch_kernel(
            kernel.function,
            (gx, gy, gz),
            (bx, by, bz),
            0,
            backend.stream.0,
            &mut args,
        )
    }
    .map_err(|e| backend.fail("cuLaunchKernel", e))
}
