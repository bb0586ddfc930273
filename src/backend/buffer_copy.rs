//! The kernel that copies between two ranges of one buffer, where a backend's own copy refuses
//! to (wgpu's `copy_buffer_to_buffer`): compaction needs it when it moves an allocation within
//! its block. The registry lists it with the other kernels (`shaders::BUFFER_COPY`).

use crate::backend::KernelSource;

/// `dst[i] = src[i]` over `n` 32-bit words: bindings `src`, `dst` (two ranges that do not
/// overlap, of one buffer or two), then params `{ n: u32 }`; workgroups of 256, in x (and y
/// past 65,535 of them). The wgpu backend copies within one buffer with it.
pub(crate) const BUFFER_COPY: KernelSource =
    // SAFETY: common.cuh comes first, and the twin declares its bindings as `BUF(T)` and reaches
    // memory only by indexing them; the kernel has no workgroup memory.
    unsafe {
        KernelSource::new(
            "buffer_copy",
            include_str!("../../shaders/buffer_copy.wgsl"),
            "buffer_copy",
        )
        .with_cuda(concat!(
            include_str!("../../shaders/cuda/common.cuh"),
            include_str!("../../shaders/cuda/buffer_copy.cu")
        ))
        .unchecked()
    };
