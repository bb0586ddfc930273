//! Pages inside a segment given back ([`Storage::unmap_pages`]) and mapped again
//! ([`Storage::map_pages`]), keeping the segment's addresses: giving back goes to the
//! unmapping thread where there is one (`unmapper.rs`), and mapping waits for what it queued
//! at the same addresses.
//!
//! [`Storage::unmap_pages`]: crate::backend::Storage::unmap_pages
//! [`Storage::map_pages`]: crate::backend::Storage::map_pages

use super::segment::{not_a_segment, Mapping};
use super::unmap::release_all;
use super::{CudaBackend, CudaBlock};
use crate::types::error::{Error, Result};
use crate::types::lock;

impl CudaBackend {
    /// Gives back the pages of `offset .. offset + size` of a segment, keeping the addresses.
    ///
    /// # Safety
    /// 1. The range is whole pages of the segment, all mapped, which no unfinished work uses.
    pub(super) unsafe fn unmap_segment_pages(
        &self,
        block: &CudaBlock,
        offset: u64,
        size: u64,
    ) -> Result<()> {
        let Some(seg) = &block.segment else {
            return Err(not_a_segment());
        };
        self.enter()?;
        let mut mappings = lock(&seg.mappings);
        let end = offset + size;
        let whole = mappings.get(&offset).is_some()
            && mappings
                .range(offset..end)
                .map(|(_, m)| m.size)
                .sum::<u64>()
                == size
            && mappings
                .range(offset..end)
                .all(|(_, m)| m.offset + m.size <= end);
        if !whole {
            return Err(Error::Internal {
                message: format!("unmapping {offset}..{end}, which is not whole mapped pages"),
            });
        }
        if let Some(u) = &self.unmapper {
            let keys: Vec<u64> = mappings.range(offset..end).map(|(&k, _)| k).collect();
            let taken: Vec<Mapping> = keys.iter().filter_map(|k| mappings.remove(k)).collect();
            // SAFETY: mapped pages of the range, which nothing uses but work recorded on the
            // stream (the caller's promise; the thread synchronises it first); they left the
            // list, so each is released once, and every later mapping there waits for them
            // (`map_range`, `move_segment_pages`).
            let errors = unsafe { u.push(block.ptr, taken, true, None) };
            drop(mappings);
            self.report_unmaps(errors);
            return Ok(());
        }
        self.sync_before_unmap()?;
        let keys: Vec<u64> = mappings.range(offset..end).map(|(&k, _)| k).collect();
        let taken: Vec<Mapping> = keys.iter().filter_map(|k| mappings.remove(k)).collect();
        // SAFETY: mapped pages of the range, which nothing uses (the caller's promise); the
        // stream is idle; they left the list, so each is released once.
        if let Err(e) = unsafe { release_all(block.ptr, &taken) } {
            self.record_err("cuMemUnmap", e);
        }
        Ok(())
    }

    /// Maps new memory behind `offset .. offset + size` of a segment, whose pages were given
    /// back.
    ///
    /// # Safety
    /// 1. The range is whole pages of the segment, or the rest of a page that smaller pages
    ///    moved into fill in part, none of it mapped.
    pub(super) unsafe fn map_segment_pages(
        &self,
        block: &CudaBlock,
        offset: u64,
        size: u64,
    ) -> Result<()> {
        let (Some(vmm), Some(seg)) = (&self.vmm, &block.segment) else {
            return Err(not_a_segment());
        };
        self.enter()?;
        let mut mappings = lock(&seg.mappings);
        let end = offset + size;
        // Whole pages, or the rest of a page that pages moved into fill in part.
        let unit = vmm.grid.base();
        if !offset.is_multiple_of(unit) || !end.is_multiple_of(unit) {
            return Err(Error::Internal {
                message: format!("mapping {offset}..{end}, which is not whole pages"),
            });
        }
        if mappings
            .range(..end)
            .next_back()
            .is_some_and(|(_, m)| m.offset + m.size > offset)
        {
            return Err(Error::Internal {
                message: format!("mapping {offset}..{end}, which holds mapped pages"),
            });
        }
        let peers = lock(&seg.peers).clone();
        let made = self.map_range(block.ptr, offset, end, vmm, &peers)?;
        mappings.extend(made.into_iter().map(|m| (m.offset, m)));
        Ok(())
    }
}
