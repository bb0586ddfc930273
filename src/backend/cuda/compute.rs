//! The `Compute` half of the seam on CUDA: NVRTC-compiled twins (`kernel.rs`), launched on the
//! backend's stream after prefetching unified bindings, and cuBLAS (`blas.rs`).

use super::{blas, kernel, CudaBackend, CudaBlock, CudaKernel};
use crate::backend::{BlockRange, Compute, Constants, KernelSource};
use crate::types::error::Result;
use crate::types::lock;
use crate::types::QueueIndex;

// SAFETY: see the promises of `Compute`.
unsafe impl Compute for CudaBackend {
    type Kernel = CudaKernel;

    fn compile(&self, source: &KernelSource, constants: Constants<'_>) -> Result<CudaKernel> {
        self.enter()?;
        kernel::compile(self, source, constants)
    }

    unsafe fn dispatch(
        &self,
        kernel: &CudaKernel,
        bindings: &[BlockRange<'_, CudaBlock>],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<QueueIndex> {
        self.enter()?;
        for b in bindings {
            self.prefetch(b.block, b.offset, b.size, false)?;
        }
        kernel::launch(self, kernel, bindings, params, workgroups)?;
        Ok(lock(&self.subs).record())
    }

    fn has_vendor_matmul(&self) -> bool {
        self.has_cublas()
    }

    unsafe fn vendor_matmul(
        &self,
        bindings: &[BlockRange<'_, CudaBlock>],
        dims: [u32; 3],
    ) -> Result<QueueIndex> {
        blas::record(self, bindings, dims, false)
    }

    unsafe fn vendor_matmul_f16(
        &self,
        bindings: &[BlockRange<'_, CudaBlock>],
        dims: [u32; 3],
    ) -> Result<QueueIndex> {
        blas::record(self, bindings, dims, true)
    }
}
