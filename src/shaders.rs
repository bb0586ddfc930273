//! Every WGSL kernel of vramkit, embedded from `shaders/`.

use crate::backend::KernelSource;

/// `y[i] = a * x[i] + b` over `n` f32 values: bindings `x` (read), `y` (write), then params
/// `{ a: f32, b: f32, n: u32 }`; workgroups of 256, in x (and y past 65,535 of them). See
/// [`crate::kernels::scale`].
pub const SCALE: KernelSource = KernelSource {
    label: "scale",
    wgsl: include_str!("../shaders/scale.wgsl"),
    entry: "main",
};

/// All kernels, for validation.
pub const ALL: &[KernelSource] = &[SCALE];
