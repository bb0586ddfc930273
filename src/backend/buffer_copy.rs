//! The kernel that copies between two ranges of one buffer, where a backend's own copy refuses
//! to (wgpu's `copy_buffer_to_buffer`): compaction needs it when it moves an allocation within
//! its block.

use crate::backend::KernelSource;

/// `dst[i] = src[i]` over `n` 32-bit words: bindings `src`, `dst` (two ranges that do not
/// overlap, of one buffer or two), then params `{ n: u32 }`; workgroups of 256, in x (and y
/// past 65,535 of them). The wgpu backend copies within one buffer with it.
pub const BUFFER_COPY: KernelSource =
    // SAFETY: the prelude (common.cuh) comes first, and the twin declares its bindings as `BUF(T)` and reaches
    // memory only by indexing them; the kernel has no workgroup memory.
    unsafe {
        KernelSource::new(
            "buffer_copy",
            include_str!("shaders/buffer_copy.wgsl"),
            "buffer_copy",
        )
        .with_cuda(BUFFER_COPY_CUDA)
        .unchecked()
    };

/// The CUDA twin: the prelude, then the kernel.
const BUFFER_COPY_CUDA: &str = concat!(
    include_str!("shaders/common.cuh"),
    include_str!("shaders/buffer_copy.cu")
);

#[cfg(test)]
mod tests {
    /// The twin starts with the prelude that callers' twins start with.
    #[test]
    fn the_twin_starts_with_the_prelude() {
        assert!(super::BUFFER_COPY_CUDA.starts_with(crate::backend::CUDA_PRELUDE));
    }
}
