//! Kernels: each a WGSL file in `shaders/`, a CPU twin used by the tests, and one dispatch
//! function that takes handles and checks shapes.

pub(crate) mod blur_intermediate;
mod elementwise;
pub mod image;
pub mod image_cpu;
mod matmul;
pub mod matmul_f16;
pub mod matmul_f16_cpu;
mod matmul_plan;
#[cfg(test)]
pub(crate) mod params_layout;
mod split_matmul;
mod split_plan;

pub use elementwise::{add, add_cpu, axpy, axpy_cpu, scale, scale_cpu};
pub use matmul::{matmul, matmul_cpu, matmul_with, MatmulDims, MatmulKernel, TiledConfig};
pub use matmul_f16::{matmul_f16_kernel, matmul_typed, CoopTile, MatmulDtype};
pub use matmul_f16_cpu::{f16_bits_to_f32, f32_to_f16_bits, matmul_f16_bound, matmul_f16_cpu};
pub use split_matmul::{split_matmul, split_matmul_rows};
pub use split_plan::balanced_rows;
