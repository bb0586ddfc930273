//! What a kernel's entry point binds, read once from its WGSL with naga, and checked against
//! every launch before anything is recorded, on every backend: a CUDA kernel given fewer
//! arguments, or a shorter params struct, than it declares would read past them, and wgpu
//! reports a mismatched bind group or dispatch only when the command buffer is finished, where
//! it would fail the work recorded before it too.

use crate::backend::{BackendLimits, KernelSource};
use crate::error::{Error, Result};

/// The bindings of one entry point: storage buffers `0..n` of group 0, then the params uniform
/// at binding `n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    /// Each storage binding's smallest size in bytes (one element of its array).
    pub storage: Vec<u64>,
    /// Whether each storage binding is declared `read` (not `read_write`).
    pub read_only: Vec<bool>,
    /// Bytes of the params struct, if the entry point reads one.
    pub params: Option<u64>,
}

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
        let mut storage: Vec<(u32, u64, bool)> = Vec::new();
        let mut params = None;
        for (handle, var) in module.global_variables.iter() {
            let Some(binding) = &var.binding else {
                continue;
            };
            if used[handle].is_empty() {
                continue;
            }
            let size = match module.types[var.ty].inner {
                naga::TypeInner::Array { stride, .. } => u64::from(stride),
                _ => u64::from(layouter[var.ty].size),
            };
            match var.space {
                naga::AddressSpace::Storage { access } if binding.group == 0 => {
                    let read_only = !access.contains(naga::StorageAccess::STORE);
                    storage.push((binding.binding, size, read_only));
                }
                naga::AddressSpace::Uniform if binding.group == 0 && params.is_none() => {
                    params = Some((binding.binding, size));
                }
                _ => {
                    return Err(shader(
                        source,
                        format!(
                            "binding {}:{} is neither a storage buffer nor the one params \
                             uniform of group 0",
                            binding.group, binding.binding
                        ),
                    ))
                }
            }
        }
        storage.sort_unstable();
        let n = storage.len() as u32;
        if storage.iter().zip(0u32..).any(|(&(b, ..), i)| b != i)
            || params.is_some_and(|(b, _)| b != n)
        {
            return Err(shader(
                source,
                "bind storage buffers at 0..n of group 0 and the params uniform at n".into(),
            ));
        }
        Ok(Self {
            read_only: storage.iter().map(|s| s.2).collect(),
            storage: storage.into_iter().map(|s| s.1).collect(),
            params: params.map(|(_, size)| size),
        })
    }

    /// Checks a launch: one binding per storage buffer, each holding at least one element, no
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
                        "binding {i} of kernel `{label}` of at least one element ({min} bytes)"
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
        let want = self.params.unwrap_or(0);
        let params = params as u64;
        if params > limits.max_params_size {
            return Err(Error::TooLarge {
                label: label.into(),
                requested: params,
                max: limits.max_params_size,
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
}
