//! The `Compute` half of the seam on wgpu: pipelines built per kernel and constants
//! (`kernel.rs`), passes recorded into the backend's encoder, texture bindings (`texture.rs`),
//! and the cooperative-matrix configurations the device was opened with.

use super::{kernel, WgpuBackend, WgpuBlock, WgpuKernel, WgpuTexture};
use crate::backend::{BlockRange, Compute, Constants, KernelBinding, KernelSource};
use crate::types::error::{Error, Result};
use crate::types::QueueIndex;

// SAFETY: see the promises of `Compute`.
unsafe impl Compute for WgpuBackend {
    type Kernel = WgpuKernel;

    fn compile(&self, source: &KernelSource, constants: Constants<'_>) -> Result<WgpuKernel> {
        self.check_lost()?;
        kernel::compile(self, source, constants)
    }

    unsafe fn dispatch(
        &self,
        kernel: &WgpuKernel,
        bindings: &[BlockRange<'_, WgpuBlock>],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<QueueIndex> {
        for b in bindings {
            b.block.unmap_for_gpu();
        }
        // Refused here, the launch is not recorded: the work recorded before it still runs.
        let (bind_group, error) =
            self.scoped(|| kernel::bind_group(&self.device, kernel, bindings, params));
        if let Some(e) = error {
            self.check_lost()?;
            return Err(Error::Backend {
                message: format!(
                    "the device refused the bindings of kernel `{}` ({e}); nothing of this \
                     launch was recorded",
                    kernel.label
                ),
            });
        }
        self.launch(kernel, &bind_group, workgroups)
    }

    fn cooperative_matrices(&self) -> &[crate::backend::CooperativeMatrix] {
        &self.cooperative
    }

    unsafe fn dispatch_textures(
        &self,
        kernel: &WgpuKernel,
        bindings: &[KernelBinding<'_, WgpuBlock, WgpuTexture>],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<QueueIndex> {
        let bind_group = self.texture_bind_group(kernel, bindings, params)?;
        self.launch(kernel, &bind_group, workgroups)
    }
}
