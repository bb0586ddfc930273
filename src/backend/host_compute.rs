//! The host backend runs no kernels: its `Compute` refuses them, naming what does.

use super::host::{HostBackend, HostBlock};
use super::{BlockRange, Compute, Constants, KernelSource};
use crate::types::error::{Error, Result};
use crate::types::QueueIndex;
// SAFETY: see the promises of `Compute`.
unsafe impl Compute for HostBackend {
    type Kernel = ();

    fn compile(&self, source: &KernelSource, _constants: Constants<'_>) -> Result<()> {
        Err(Error::Unsupported {
            what: format!("kernel `{}`", source.label()),
            reason: "the host backend runs no shaders; use a wgpu context, or the kernel's CPU \
                     reference"
                .into(),
        })
    }

    unsafe fn dispatch(
        &self,
        _kernel: &(),
        _bindings: &[BlockRange<'_, HostBlock>],
        _params: &[u8],
        _workgroups: [u32; 3],
    ) -> Result<QueueIndex> {
        Err(Error::Unsupported {
            what: "dispatch".into(),
            reason: "the host backend runs no shaders".into(),
        })
    }
}
