//! Pinning: an allocation whose place code outside vramkit holds (a wgpu buffer binding handed
//! to the application) never moves again. Compaction skips pinned chunks and never empties
//! their blocks (`compact/`), exactly as for allocations made
//! [`immovable`](crate::AllocDesc::immovable).

use super::Manager;
use crate::backend::Storage;
use crate::types::error::Result;
use crate::BufferHandle;

impl<B: Storage> Manager<B> {
    /// Makes the allocation behind `h` immovable for the rest of its life.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn pin(&mut self, h: BufferHandle) -> Result<()> {
        self.get(h)?;
        if let Some(a) = self.allocs.get_mut(h.key) {
            if a.movable {
                a.movable = false;
                self.pools[a.kind.index()].set_owner(a.placement.chunk, h.key, false);
            }
        }
        Ok(())
    }

    /// Marks the allocation's block as reachable by code outside vramkit (a binding or a device
    /// pointer): code that strays past its range may write anywhere in the block, so no range
    /// of it is trusted to read as zeros again: new zeroed allocations in it are cleared.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn distrust(&mut self, h: BufferHandle) -> Result<()> {
        let a = self.get(h)?;
        let (kind, block) = (a.kind, a.placement.block);
        self.pools[kind.index()].distrust(block);
        Ok(())
    }
}
