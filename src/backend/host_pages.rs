//! The host backend's model of pages given back inside a block ([`Storage::unmap_pages`]):
//! the ranges without memory behind them. Their bytes are overwritten with a pattern when
//! unmapped (as the memory is gone) and stay so when mapped again (new memory holds anything),
//! and any access to them is recorded as a fault, which the next
//! [`check_device`](Storage::check_device) returns, as a GPU would fault on them.
//!
//! [`Storage::unmap_pages`]: super::Storage::unmap_pages

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use super::host::{HostBackend, HostBlock};
use super::host_pieces::{PieceOp, Pieces};
use super::{ForeignStream, PageGrid};
use crate::types::error::{Error, Result};
use crate::types::{lock, MemoryKind};

/// What unmapped bytes read as.
pub(super) const POISON: u8 = 0xa5;

/// A block's unmapped ranges, sorted and disjoint, and those whose old mappings a foreign
/// stream's work may still use ([`Storage::move_pages_after`]).
///
/// [`Storage::move_pages_after`]: super::Storage::move_pages_after
#[derive(Debug, Default)]
pub(super) struct HostPages {
    unmapped: Mutex<Vec<Range<u64>>>,
    behind: Mutex<Vec<(Range<u64>, ForeignStream)>>,
    /// The driver's mappings, for a resizable block.
    pub(super) pieces: Pieces,
}

impl HostPages {
    /// Marks `r` unmapped; `false` if any of it already was.
    pub(super) fn unmap(&self, r: Range<u64>) -> bool {
        if r.start >= r.end {
            return false;
        }
        let mut u = lock(&self.unmapped);
        if u.iter().any(|x| x.start < r.end && r.start < x.end) {
            return false;
        }
        let at = u.partition_point(|x| x.start < r.start);
        u.insert(at, r);
        // Join touching neighbours, so that one map can cover what several unmaps made.
        let mut i = at.saturating_sub(1);
        while i + 1 < u.len() {
            if u[i].end == u[i + 1].start {
                let next = u.remove(i + 1);
                u[i].end = next.end;
            } else if i > at {
                break;
            } else {
                i += 1;
            }
        }
        true
    }

    /// Marks `r` mapped; `false` unless all of it was unmapped.
    pub(super) fn map(&self, r: Range<u64>) -> bool {
        let mut u = lock(&self.unmapped);
        let Some(i) = u.iter().position(|x| x.start <= r.start && r.end <= x.end) else {
            return false;
        };
        let x = u.remove(i);
        if r.end < x.end {
            u.insert(i, r.end..x.end);
        }
        if x.start < r.start {
            u.insert(i, x.start..r.start);
        }
        true
    }

    /// Whether any of `r` is unmapped.
    pub(super) fn touches(&self, r: Range<u64>) -> bool {
        if r.start >= r.end {
            return false;
        }
        let u = lock(&self.unmapped);
        !u.is_empty() && u.iter().any(|x| x.start < r.end && r.start < x.end)
    }

    /// Forgets the unmapped ranges past `size` (the block shrank); returns their bytes.
    pub(super) fn cut(&self, size: u64) -> u64 {
        let mut u = lock(&self.unmapped);
        let mut bytes = 0;
        u.retain_mut(|x| {
            if x.start >= size {
                bytes += x.end - x.start;
                false
            } else {
                if x.end > size {
                    bytes += x.end - size;
                    x.end = size;
                }
                true
            }
        });
        bytes
    }

    /// Unmapped bytes.
    pub(super) fn total(&self) -> u64 {
        lock(&self.unmapped).iter().map(|x| x.end - x.start).sum()
    }
}

impl HostBackend {
    /// The model of [`Storage::move_pages`]: the source's pages go, the destination's come
    /// back, the memory held the same; a move whose source was not mapped is a fault, as a
    /// GPU's would be. `behind` models [`Storage::move_pages_after`]: where that stream is
    /// held, the source's old mapping is left to its running work (its bytes stay) instead of
    /// the host waiting, as the CUDA backend's unmapping thread does; mapping there again
    /// waits ([`catch_up`](Self::catch_up)).
    ///
    /// [`Storage::move_pages`]: super::Storage::move_pages
    /// [`Storage::move_pages_after`]: super::Storage::move_pages_after
    pub(super) fn move_model(
        &self,
        src: &HostBlock,
        from: Range<u64>,
        dst: &HostBlock,
        to: u64,
        behind: Option<ForeignStream>,
    ) {
        let size = from.end - from.start;
        if !self.pieces(src, from.clone(), PieceOp::MoveTo(dst, to), "moving pages") {
            return;
        }
        self.catch_up(dst, to..to + size);
        if !src.pages.unmap(from.clone()) {
            self.fault(format!("moving pages from {from:?}, which were unmapped"));
            return;
        }
        if !dst.pages.map(to..to + size) {
            self.fault(format!(
                "moving pages to {:?}, which were mapped",
                to..to + size
            ));
        }
        match behind.filter(|s| self.streams.is_held(*s)) {
            Some(s) => lock(&src.pages.behind).push((from, s)),
            None => super::host_bytes::poison(src, from),
        }
    }

    /// The model of [`Storage::grow_unmapped`]: the block's end moves with no memory behind
    /// the new bytes (unmapped; their bytes poisoned where kept), and none is counted.
    ///
    /// [`Storage::grow_unmapped`]: super::Storage::grow_unmapped
    pub(super) fn grow_model(&self, block: &HostBlock, new_size: u64) -> Result<()> {
        let old = block.size.load(Ordering::Acquire);
        if new_size <= old {
            return Ok(());
        }
        let grid = self.grid();
        if !grid.is_boundary(old) || !grid.is_boundary(new_size) || self.pieces_end(block) > old {
            return Err(Error::Internal {
                message: format!(
                    "growing a block from {old} to {new_size} bytes without memory: off the \
                     page grid, or pages mapped past its end"
                ),
            });
        }
        let mut bytes = lock(&block.bytes);
        if self.config.keep_bytes {
            let fits = if self.config.reserve.is_some() {
                // Within the reservation (its bytes and address stay).
                new_size as usize <= bytes.len()
            } else {
                bytes.resize(usize::try_from(new_size).unwrap_or(usize::MAX))
            };
            if !fits {
                return Err(Error::OutOfMemory {
                    requested: new_size - old,
                    kind: MemoryKind::Device,
                    detail: "the host has no address space for it".into(),
                });
            }
            bytes
                .range_mut(old as usize..new_size as usize)
                .fill(POISON);
        }
        block.size.store(new_size, Ordering::Release);
        drop(bytes);
        if !block.pages.unmap(old..new_size) {
            self.fault(format!(
                "growing to {new_size} over pages already unmapped past {old}"
            ));
        }
        Ok(())
    }

    /// Before memory is mapped at `r` of `block`: the streams whose work may still use an old
    /// mapping there finish it (the host waits, as the CUDA backend waits for its unmapping
    /// thread).
    pub(super) fn catch_up(&self, block: &HostBlock, r: Range<u64>) {
        let mut behind = lock(&block.pages.behind);
        if behind.is_empty() {
            return;
        }
        behind.retain(|(x, stream)| {
            let meets = x.start < r.end && r.start < x.end;
            if meets {
                self.streams.resume(*stream);
            }
            !meets
        });
    }

    /// The pages of a block of `size` bytes just made: its pieces tracked where it is
    /// resizable.
    pub(super) fn new_pages(&self, kind: MemoryKind, size: u64) -> HostPages {
        if !super::Storage::resizable(self, kind) {
            return HostPages::default();
        }
        HostPages {
            pieces: Pieces::made(self, size),
            ..HostPages::default()
        }
    }

    /// The pages of resizable device blocks ([`HostConfig::page_size`],
    /// [`HostConfig::page_growth`]).
    ///
    /// [`HostConfig::page_size`]: super::host::HostConfig::page_size
    /// [`HostConfig::page_growth`]: super::host::HostConfig::page_growth
    pub(super) fn grid(&self) -> PageGrid {
        let config = &self.config;
        if config.page_growth {
            PageGrid::growing(config.page_size)
        } else {
            PageGrid::fixed(config.page_size)
        }
    }

    /// Records a fault for the next `check_device`.
    pub(super) fn fault(&self, what: String) {
        log::error!("vramkit host backend: {what}");
        crate::types::lock(&self.fault).get_or_insert(format!(
            "the host backend's model of pages: {what} (a vramkit bug)"
        ));
    }

    /// Records a fault if `len` bytes at `offset` of `block` reach memory given back.
    pub(super) fn check_mapped(&self, block: &HostBlock, offset: u64, len: u64, what: &str) {
        if block.pages.touches(offset..offset + len) {
            self.fault(format!(
                "{what} reached unmapped memory at {offset}..+{len}"
            ));
        }
    }
}
