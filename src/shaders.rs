//! Every WGSL kernel of vramkit, embedded from `shaders/`.

use crate::backend::KernelSource;

/// `y[i] = a * x[i] + b` over `n` f32 values: bindings `x` (read), `y` (write), then params
/// `{ a: f32, b: f32, n: u32 }`; workgroups of 256, in x (and y past 65,535 of them). See
/// [`crate::kernels::scale`].
pub const SCALE: KernelSource = KernelSource {
    label: "scale",
    wgsl: include_str!("../shaders/scale.wgsl"),
    entry: "main",
    guarded: true,
};

/// `C = A·B` without workgroup memory, 8×8 per invocation (CPU adapters). Override constants
/// `WG_X`, `WG_Y`. See [`crate::kernels::matmul`].
pub const MATMUL_REGISTER: KernelSource = KernelSource {
    label: "matmul_register",
    wgsl: include_str!("../shaders/matmul_register.wgsl"),
    entry: "main",
    guarded: true,
};

/// `C = A·B` with 128×128 workgroup tiles staged in workgroup memory, 8×8 per invocation
/// (GPUs). See [`crate::kernels::matmul`].
pub const MATMUL_TILED: KernelSource = KernelSource {
    label: "matmul_tiled",
    wgsl: include_str!("../shaders/matmul_tiled.wgsl"),
    entry: "main",
    guarded: true,
};

/// All kernels, for validation.
pub const ALL: &[KernelSource] = &[SCALE, MATMUL_REGISTER, MATMUL_TILED];
