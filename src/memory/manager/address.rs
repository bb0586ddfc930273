//! Device addresses for code outside vramkit: the address of an allocation, which then never
//! moves (it is pinned, as a wgpu binding pins).

use super::{Access, Manager};
use crate::backend::{Storage, StreamRef};
use crate::types::error::{Error, Result};
use crate::BufferHandle;

impl<B: Storage> Manager<B> {
    /// The address, requested size and stream of the allocation behind `h`, which becomes
    /// immovable.
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::Unsupported`] where the backend's blocks have no
    /// address outside code can use.
    pub fn device_address(
        &mut self,
        backend: &B,
        h: BufferHandle,
    ) -> Result<(u64, u64, StreamRef)> {
        let r = self.resolve(h, 0, None, Access::Bytes, backend.limits())?;
        let Some(base) = backend.device_address(r.block) else {
            return Err(Error::Unsupported {
                what: "a device address of an allocation".into(),
                reason: "this backend's memory has no address outside code can use (wgpu \
                         buffers: use Interop::wgpu_binding; a host backend with resizable \
                         blocks: set HostConfig::resizable to false)"
                    .into(),
            });
        };
        let address = base + r.offset;
        self.pin(h)?;
        let a = self.get(h)?;
        Ok((address, a.requested, a.stream))
    }
}
