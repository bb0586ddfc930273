//! What a kernel's entry point binds, read once from its WGSL with naga, and checked against
//! every launch before anything is recorded, on every backend: a CUDA kernel given fewer
//! arguments, or a shorter params struct, than it declares would read past them, and wgpu
//! reports a mismatched bind group or dispatch only when the command buffer is finished, where
//! it would fail the work recorded before it too.

use crate::backend::KernelSource;
use crate::types::error::{Error, Result};
use crate::types::texture::TextureFormat;
use crate::types::BackendLimits;

/// What one binding of an entry point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(any(feature = "wgpu", feature = "cuda")),
    allow(dead_code, reason = "only the WGSL reader makes slots")
)]
pub(crate) enum Slot {
    /// A storage buffer: its smallest size in bytes (WGSL's minimum binding size: the whole
    /// type, with one element of a runtime-sized array), and whether it is declared `read`
    /// (not `read_write`).
    Buffer { min: u64, read_only: bool },
    /// A sampled `texture_2d<f32>`.
    Sampled,
    /// A storage texture of this format (`None`: a format vramkit's textures lack).
    Stored(Option<TextureFormat>),
    /// A sampler.
    Sampler,
}

/// The bindings of one entry point: bindings `0..n` of group 0 (storage buffers; textures and
/// samplers in kernels launched with textures), then the params uniform at binding `n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    /// Binding `i`'s kind.
    pub slots: Vec<Slot>,
    /// Each storage buffer's smallest size in bytes, in binding order (buffer-only kernels).
    pub storage: Vec<u64>,
    /// Invocations per workgroup in x, y and z (`@workgroup_size`).
    pub workgroup_size: [u32; 3],
    /// Bytes of the `var<workgroup>` variables the entry point uses.
    pub workgroup_bytes: u64,
    /// Whether each storage buffer is declared `read`, in binding order.
    pub read_only: Vec<bool>,
    /// Bytes of the params struct, if the entry point reads one.
    pub params: Option<u64>,
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn storage_format(f: naga::StorageFormat) -> Option<TextureFormat> {
    Some(match f {
        naga::StorageFormat::Rgba8Unorm => TextureFormat::Rgba8Unorm,
        naga::StorageFormat::Rgba16Float => TextureFormat::Rgba16Float,
        naga::StorageFormat::Rgba32Float => TextureFormat::Rgba32Float,
        naga::StorageFormat::R32Float => TextureFormat::R32Float,
        _ => return None,
    })
}

#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn shader(source: &KernelSource, message: String) -> Error {
    Error::Shader {
        label: source.label().into(),
        message,
    }
}

impl Signature {
    /// Reads the entry point's bindings.
    ///
    /// # Errors
    /// [`Error::Shader`] if the WGSL does not parse or validate, the entry point is missing,
    /// or its bindings are not storage buffers `0..n` of group 0 and at most one uniform at
    /// binding `n`.
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    pub fn of(source: &KernelSource) -> Result<Self> {
        let wgsl = source.wgsl();
        let module = naga::front::wgsl::parse_str(wgsl)
            .map_err(|e| shader(source, e.emit_to_string(wgsl)))?;
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .map_err(|e| shader(source, e.emit_to_string(wgsl)))?;
        let index = module
            .entry_points
            .iter()
            .position(|e| e.name == source.entry())
            .ok_or_else(|| shader(source, format!("no entry point `{}`", source.entry())))?;
        let used = info.get_entry_point(index);
        let mut layouter = naga::proc::Layouter::default();
        layouter
            .update(module.to_ctx())
            .map_err(|e| shader(source, format!("type layout: {e}")))?;
        let mut slots: Vec<(u32, Slot)> = Vec::new();
        let mut params = None;
        let mut workgroup_bytes = 0u64;
        for (handle, var) in module.global_variables.iter() {
            if used[handle].is_empty() {
                continue;
            }
            // WGSL's minimum binding size: the whole type, where a runtime-sized array counts
            // one element (naga's layout counts it so, inside a struct as well).
            let size = u64::from(layouter[var.ty].size);
            if var.space == naga::AddressSpace::WorkGroup {
                workgroup_bytes = workgroup_bytes.saturating_add(size);
            }
            let Some(binding) = &var.binding else {
                continue;
            };
            let slot = match (&var.space, &module.types[var.ty].inner) {
                _ if binding.group != 0 => None,
                (naga::AddressSpace::Storage { access }, _) => Some(Slot::Buffer {
                    min: size,
                    read_only: !access.contains(naga::StorageAccess::STORE),
                }),
                (naga::AddressSpace::Uniform, _) if params.is_none() => {
                    params = Some((binding.binding, size));
                    continue;
                }
                (
                    naga::AddressSpace::Handle,
                    naga::TypeInner::Image {
                        dim: naga::ImageDimension::D2,
                        arrayed: false,
                        class,
                    },
                ) => match class {
                    naga::ImageClass::Sampled {
                        kind: naga::ScalarKind::Float,
                        multi: false,
                    } => Some(Slot::Sampled),
                    naga::ImageClass::Storage { format, .. } => {
                        Some(Slot::Stored(storage_format(*format)))
                    }
                    _ => None,
                },
                (naga::AddressSpace::Handle, naga::TypeInner::Sampler { comparison: false }) => {
                    Some(Slot::Sampler)
                }
                _ => None,
            };
            let Some(slot) = slot else {
                return Err(shader(
                    source,
                    format!(
                        "binding {}:{} is neither a storage buffer, a 2D float texture, a \
                         sampler nor the one params uniform of group 0",
                        binding.group, binding.binding
                    ),
                ));
            };
            slots.push((binding.binding, slot));
        }
        slots.sort_unstable_by_key(|s| s.0);
        let n = slots.len() as u32;
        if slots.iter().zip(0u32..).any(|(&(b, _), i)| b != i)
            || params.is_some_and(|(b, _)| b != n)
        {
            return Err(shader(
                source,
                "bind storage buffers (and textures) at 0..n of group 0 and the params uniform \
                 at n"
                    .into(),
            ));
        }
        let slots: Vec<Slot> = slots.into_iter().map(|s| s.1).collect();
        let buffers = || {
            slots.iter().filter_map(|s| match *s {
                Slot::Buffer { min, read_only } => Some((min, read_only)),
                _ => None,
            })
        };
        Ok(Self {
            workgroup_size: module.entry_points[index].workgroup_size,
            workgroup_bytes,
            storage: buffers().map(|b| b.0).collect(),
            read_only: buffers().map(|b| b.1).collect(),
            slots,
            params: params.map(|(_, size)| size),
        })
    }

    /// A build with neither the wgpu nor the CUDA backend reads no WGSL: no backend of it runs
    /// kernels (the host's refuses them).
    ///
    /// # Errors
    /// Always [`Error::Unsupported`], naming the features that run kernels.
    #[cfg(not(any(feature = "wgpu", feature = "cuda")))]
    pub fn of(source: &KernelSource) -> Result<Self> {
        Err(Error::Unsupported {
            what: format!("kernel `{}`", source.label()),
            reason: "this build of vramkit has no backend that runs kernels; build it with \
                     feature `wgpu` (a default feature) or `cuda`"
                .into(),
        })
    }

    /// Whether the entry point binds textures or samplers (launch it with
    /// `ctx.textures().dispatch`).
    pub fn binds_textures(&self) -> bool {
        self.slots.iter().any(|s| !matches!(s, Slot::Buffer { .. }))
    }

    /// Checks a launch: one binding per storage buffer, each at least its type's size, no
    /// `read` binding in a block another binding writes (`blocks[i]` names binding `i`'s
    /// block), params of the struct's size (or that rounded up to 16 bytes), and a grid within
    /// the device's limits.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for the wrong number of bindings, a binding too small for one
    /// element, or params of the wrong size; [`Error::InvalidParameter`] for a grid past the
    /// device's limits or an empty one.
    pub fn check(
        &self,
        source: &KernelSource,
        bindings: &[u64],
        blocks: &[usize],
        params: usize,
        workgroups: [u32; 3],
        limits: &BackendLimits,
    ) -> Result<()> {
        let label = source.label();
        if self.binds_textures() {
            return Err(Error::Unsupported {
                what: format!("kernel `{label}` through dispatch"),
                reason: "it binds textures or samplers: launch it with ctx.textures().dispatch"
                    .into(),
            });
        }
        self.check_buffers(source, bindings, blocks)?;
        self.check_params_and_grid(source, params, workgroups, limits)
    }

    /// Checks the storage buffers of a launch, in binding order: one per storage binding
    /// (`bindings[i]` bytes), each holding at least one element, and no `read` binding in a
    /// block another binding writes (`blocks[i]` names binding `i`'s block).
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn check_buffers(
        &self,
        source: &KernelSource,
        bindings: &[u64],
        blocks: &[usize],
    ) -> Result<()> {
        let label = source.label();
        if bindings.len() != self.storage.len() {
            return Err(Error::ShapeMismatch {
                expected: format!("{} bindings for kernel `{label}`", self.storage.len()),
                actual: format!("{}", bindings.len()),
            });
        }
        for (i, (&size, &min)) in bindings.iter().zip(&self.storage).enumerate() {
            if size < min {
                return Err(Error::ShapeMismatch {
                    expected: format!(
                        "binding {i} of kernel `{label}` of at least {min} bytes (its WGSL \
                         type's size, one element of a runtime-sized array)"
                    ),
                    actual: format!("{size} bytes"),
                });
            }
        }
        for (i, &ro) in self.read_only.iter().enumerate() {
            let shared = |j: usize| j != i && blocks[j] == blocks[i] && !self.read_only[j];
            if ro && (0..blocks.len()).any(shared) {
                return Err(Error::InvalidParameter {
                    name: "binding",
                    value: format!("{i} of kernel `{label}`, declared `read`"),
                    reason: "allocations share buffers (blocks), and a buffer cannot be bound \
                             `read` and `read_write` in one launch: declare every storage \
                             binding `read_write`",
                });
            }
        }
        Ok(())
    }

    /// Checks params of the struct's size (or that rounded up to 16 bytes), within the
    /// device's limit, and a grid within the device's limits. With
    /// [`check_workgroup`](Self::check_workgroup) at build time, a launch that passes is never
    /// refused by the driver later, when its command buffer is submitted.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn check_params_and_grid(
        &self,
        source: &KernelSource,
        params: usize,
        workgroups: [u32; 3],
        limits: &BackendLimits,
    ) -> Result<()> {
        let label = source.label();
        let want = self.params.unwrap_or(0);
        let params = params as u64;
        if params > limits.max_params_size {
            return Err(Error::TooLarge {
                label: label.into(),
                requested: params,
                max: limits.max_params_size,
                unit: "bytes",
                what: "largest params struct a kernel launch may take",
            });
        }
        if params != want && params != want.next_multiple_of(16) {
            return Err(Error::ShapeMismatch {
                expected: format!("params of {want} bytes for kernel `{label}`"),
                actual: format!("{params} bytes"),
            });
        }
        let over = workgroups
            .iter()
            .zip(&limits.max_workgroups)
            .any(|(&n, &m)| n > m);
        if over || workgroups.contains(&0) {
            return Err(Error::InvalidParameter {
                name: "workgroups",
                value: format!(
                    "{workgroups:?} for kernel `{label}` (the device allows {:?})",
                    limits.max_workgroups
                ),
                reason: "each dimension must be at least 1 and at most the device's limit \
                         (BackendLimits::max_workgroups): split the launch or use the y and z \
                         dimensions",
            });
        }
        Ok(())
    }

    /// Checks the entry point's `@workgroup_size` and `var<workgroup>` bytes against the
    /// device's limits, before the pipeline is built.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a workgroup past the device's size or invocation
    /// limits; [`Error::TooLarge`] for workgroup memory past the device's.
    pub fn check_workgroup(&self, source: &KernelSource, limits: &BackendLimits) -> Result<()> {
        let label = source.label();
        let size = self.workgroup_size;
        let invocations = size.iter().map(|&n| u64::from(n)).product::<u64>();
        let over = size
            .iter()
            .zip(&limits.max_workgroup_size)
            .any(|(&n, &m)| n > m);
        if over || invocations > u64::from(limits.max_invocations) {
            return Err(Error::InvalidParameter {
                name: "@workgroup_size",
                value: format!(
                    "{size:?} ({invocations} invocations) of kernel `{label}` (the device allows \
                     {:?}, {} invocations in all)",
                    limits.max_workgroup_size, limits.max_invocations
                ),
                reason: "a workgroup past the device's limits is refused by the driver: declare \
                         a smaller @workgroup_size and launch more workgroups",
            });
        }
        if self.workgroup_bytes > u64::from(limits.max_workgroup_storage) {
            return Err(Error::TooLarge {
                label: format!("var<workgroup> of kernel `{label}`"),
                requested: self.workgroup_bytes,
                max: u64::from(limits.max_workgroup_storage),
                unit: "bytes",
                what: "workgroup (shared) memory one kernel may declare on this device; \
                       keep less per workgroup",
            });
        }
        Ok(())
    }
}
