//! Copies between two ranges of one buffer, which wgpu's `copy_buffer_to_buffer` refuses
//! ("source and destination cannot be the same buffer"): a compute kernel
//! ([`BUFFER_COPY`](crate::backend::BUFFER_COPY)) in chunks of at most the largest binding.
//! Compaction needs it when it moves an allocation within its block.

use super::{kernel, WgpuBackend, WgpuBlock, WgpuKernel};
use crate::backend::BUFFER_COPY;
use crate::backend::{BlockRange, Compute};
use crate::types::error::{Error, Result};
use crate::types::QueueIndex;

impl WgpuBackend {
    fn copy_kernel(&self) -> Result<&WgpuKernel> {
        if let Some(k) = self.copy_kernel.get() {
            return Ok(k);
        }
        let k = kernel::compile(self, &BUFFER_COPY, &[])?;
        // Another thread may have set it meanwhile; either pipeline is the same.
        let _ = self.copy_kernel.set(k);
        self.copy_kernel.get().ok_or_else(|| Error::Internal {
            message: "the copy kernel vanished".into(),
        })
    }

    /// Records a copy of `size` bytes from `src` to `dst` within `block`.
    ///
    /// # Safety
    /// 1. Both ranges lie inside the block and do not overlap.
    /// 2. `src`, `dst` are multiples of the offset alignment and `size` of 4 (the memory
    ///    manager's units are).
    pub(super) unsafe fn copy_within(
        &self,
        block: &WgpuBlock,
        src: u64,
        dst: u64,
        size: u64,
    ) -> Result<QueueIndex> {
        let kernel = self.copy_kernel()?;
        let align = self.limits.offset_alignment;
        let chunk = (self.limits.max_binding_size.min(1 << 30) / align * align).max(align);
        let (mut at, mut index) = (0, 0);
        while at < size {
            let n = chunk.min(size - at);
            let words = (n / 4) as u32;
            let groups = words.div_ceil(256);
            let (x, y) = if groups <= 65_535 {
                (groups, 1)
            } else {
                (65_535, groups.div_ceil(65_535))
            };
            let bindings = [
                BlockRange {
                    block,
                    offset: src + at,
                    size: n,
                },
                BlockRange {
                    block,
                    offset: dst + at,
                    size: n,
                },
            ];
            // SAFETY: both ranges lie inside the block, aligned (the caller's promise), each at
            // most the largest binding; the kernel copies `words` words, the ranges' length.
            index = unsafe { self.dispatch(kernel, &bindings, &words.to_ne_bytes(), [x, y, 1])? };
            at += n;
        }
        Ok(index)
    }
}
