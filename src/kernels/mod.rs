//! Kernels: each a WGSL file in `shaders/`, a CPU twin used by the tests, and one dispatch
//! function that takes handles and checks shapes.

pub(crate) mod blur_intermediate;
mod elementwise;
pub mod image;
pub mod image_cpu;
mod matmul;
#[cfg(test)]
pub(crate) mod params_layout;

pub use elementwise::{add, add_cpu, axpy, axpy_cpu, scale, scale_cpu};
pub use matmul::{matmul, matmul_cpu, matmul_with, MatmulDims, MatmulKernel, TiledConfig};
