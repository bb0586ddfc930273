//! What a backend's device is and what it can allocate and bind.

/// What a backend can allocate and bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendLimits {
    /// Largest single block (buffer) the API can create.
    pub max_block_size: u64,
    /// Largest range one kernel binding may cover.
    pub max_binding_size: u64,
    /// Alignment of binding offsets; sub-allocations are aligned to it.
    pub offset_alignment: u64,
    /// Copies must start at, and have sizes that are, multiples of this.
    pub copy_alignment: u64,
    /// Most workgroups one launch may have in x, y and z.
    pub max_workgroups: [u32; 3],
    /// Largest params struct (uniform buffer) one launch may take, in bytes.
    pub max_params_size: u64,
    /// Most texels per side of a 2D texture.
    pub max_texture_side: u32,
    /// Whether kernels can bind textures ([`Compute::dispatch_textures`](crate::backend::Compute::dispatch_textures)); where they cannot,
    /// textures are linear memory that only transfers reach.
    pub texture_kernels: bool,
    /// Most bytes of workgroup (shared) memory one kernel may declare; kernels that need more
    /// than a device gives are not launched there (the blur falls back to a pass without it).
    pub max_workgroup_storage: u32,
    /// Most invocations of one workgroup in x, y and z (a kernel's `@workgroup_size`).
    pub max_workgroup_size: [u32; 3],
    /// Most invocations of one workgroup in all (x × y × z).
    pub max_invocations: u32,
}

/// A cooperative-matrix (tensor core) configuration a device was opened with: `m × k` by
/// `k × n` inputs of `inputs`, accumulated (and returned) in `accumulator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CooperativeMatrix {
    /// Rows of the first input and of the result.
    pub m: u32,
    /// Columns of the second input and of the result.
    pub n: u32,
    /// Columns of the first input, rows of the second.
    pub k: u32,
    /// Element type of the inputs.
    pub inputs: CooperativeScalar,
    /// Element type of the accumulator and the result.
    pub accumulator: CooperativeScalar,
}

/// The element types of cooperative matrices vramkit's kernels use.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CooperativeScalar {
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
}

/// Total and free memory of the device, where the API tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Bytes of memory the device has.
    pub total: u64,
    /// Bytes free now (for every process).
    pub free: u64,
}

/// A description of the device a backend runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The backend API, e.g. `"Vulkan"`, `"host"`.
    pub api: String,
    /// The device name, e.g. `"llvmpipe (LLVM 15.0.6, 256 bits)"`.
    pub name: String,
    /// Driver name and version, where known.
    pub driver: String,
    /// `"cpu"`, `"discrete"`, `"integrated"`, `"virtual"` or `"other"`.
    pub device_type: String,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {} ({}, {})",
            self.name, self.api, self.device_type, self.driver
        )
    }
}
