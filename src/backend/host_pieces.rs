//! The host backend's model of the driver's mappings inside a resizable block, as the CUDA
//! backend keeps them (physical allocations mapped at offsets of a segment): each piece is a
//! page of the [grid](super::PageGrid), the rest of one, or a smaller page moved into a larger
//! one. As the driver's, only whole pieces are given back or moved; a moved piece lands inside
//! one page; nothing is mapped over a piece; a growth maps from the end of the last piece or of
//! the page holding the old end, and must leave every new byte mapped; a shrink keeps the page
//! holding the new end. Anything else is recorded as a fault, where the CUDA backend would
//! refuse the call or the GPU fault.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;

use super::host::{HostBackend, HostBlock};
use crate::types::lock;

/// A block's pieces, offset → size; `None` for a block that holds its memory whole.
#[derive(Debug, Default)]
pub(super) struct Pieces(Mutex<Option<BTreeMap<u64, u64>>>);

impl Pieces {
    /// The pieces of a resizable block of `size` bytes, just made: its pages up to the one
    /// holding its end.
    pub(super) fn made(backend: &HostBackend, size: u64) -> Self {
        let grid = backend.grid();
        let pieces = grid
            .pages(0..grid.ceil(size))
            .map(|p| (p.start, p.end - p.start))
            .collect();
        Self(Mutex::new(Some(pieces)))
    }
}

/// What is done to the pieces of a range.
pub(super) enum PieceOp<'a> {
    /// Given back: whole pieces only.
    Unmap,
    /// Mapped: one piece per page, or the rest of one.
    Map,
    /// Moved, whole pieces, to this block at this offset.
    MoveTo(&'a HostBlock, u64),
}

/// Whether `r` is whole pieces of `map`, none reaching past its ends, with no gap.
fn whole(map: &BTreeMap<u64, u64>, r: &Range<u64>) -> bool {
    let before = map
        .range(..r.start)
        .next_back()
        .is_some_and(|(&o, &s)| o + s > r.start);
    let mut at = r.start;
    for (&o, &s) in map.range(r.clone()) {
        if o != at || o + s > r.end {
            return false;
        }
        at = o + s;
    }
    !before && at == r.end
}

/// Whether any piece of `map` meets `r`.
fn meets(map: &BTreeMap<u64, u64>, r: &Range<u64>) -> bool {
    map.range(..r.end)
        .next_back()
        .is_some_and(|(&o, &s)| o + s > r.start)
}

impl HostBackend {
    /// Checks `op` on `r` of `block` against the driver's rules and applies it to the pieces;
    /// records a fault and returns `false` where the driver would refuse it. `r` must begin and
    /// end on multiples of the grid's smallest page (the driver's granularity) in any block.
    pub(super) fn pieces(
        &self,
        block: &HostBlock,
        r: Range<u64>,
        op: PieceOp<'_>,
        what: &str,
    ) -> bool {
        let grid = self.grid();
        let unit = grid.base();
        if !r.start.is_multiple_of(unit) || !r.end.is_multiple_of(unit) {
            self.fault(format!("{what} {r:?}, which is not whole pages"));
            return false;
        }
        let mut src = lock(&block.pages.pieces.0);
        let Some(map) = src.as_mut() else {
            return true;
        };
        if let PieceOp::Map = op {
            if meets(map, &r) {
                self.fault(format!("{what} {r:?}, over pages mapped there"));
                return false;
            }
            map.extend(grid.pages(r).map(|p| (p.start, p.end - p.start)));
            return true;
        }
        if !whole(map, &r) {
            self.fault(format!("{what} {r:?}, which is not whole mapped pages"));
            return false;
        }
        let PieceOp::MoveTo(dst, to) = op else {
            map.retain(|&o, _| !r.contains(&o));
            return true;
        };
        let lands = |&(o, s): &(u64, u64)| {
            let at = to + (o - r.start);
            at.is_multiple_of(unit) && grid.page_at(at).end >= at + s
        };
        let taken: Vec<(u64, u64)> = map.range(r.clone()).map(|(&o, &s)| (o, s)).collect();
        if !taken.iter().all(lands) {
            self.fault(format!(
                "{what} {r:?} to {to}, where a page would lie across two"
            ));
            return false;
        }
        let dest = to..to + (r.end - r.start);
        let same = std::ptr::eq(block, dst);
        let mut other = (!same).then(|| lock(&dst.pages.pieces.0));
        let Some(dmap) = (match other.as_mut() {
            Some(d) => d.as_mut(),
            None => Some(&mut *map),
        }) else {
            self.fault(format!("{what} to a block that holds its memory whole"));
            return false;
        };
        if meets(dmap, &dest) {
            self.fault(format!("{what} to {dest:?}, over pages mapped there"));
            return false;
        }
        dmap.extend(taken.iter().map(|&(o, s)| (to + (o - r.start), s)));
        // Only the source's pieces go (the destination may be the same block).
        let moved: Vec<u64> = taken.iter().map(|&(o, _)| o).collect();
        drop(other);
        for o in moved {
            map.remove(&o);
        }
        true
    }

    /// A growth of `block` from `old` to `new` bytes with memory: pages mapped from the end of
    /// the last piece or of the page holding `old`, up to the page holding `new`; every new
    /// byte must then be mapped (the growth clears them).
    pub(super) fn pieces_grown(&self, block: &HostBlock, old: u64, new: u64) {
        let grid = self.grid();
        let mut guard = lock(&block.pages.pieces.0);
        let Some(map) = guard.as_mut() else {
            return;
        };
        let end = map.last_key_value().map_or(0, |(&o, &s)| o + s);
        let from = end.max(grid.ceil(old));
        map.extend(
            grid.pages(from..grid.ceil(new).max(from))
                .map(|p| (p.start, p.end - p.start)),
        );
        let covered: u64 = map
            .range(..new)
            .map(|(&o, &s)| (o + s).min(new).saturating_sub(o.max(old)))
            .sum();
        if covered != new - old {
            self.fault(format!(
                "growing from {old} to {new} bytes over pages not mapped below the old end"
            ));
        }
    }

    /// The end of the last piece of `block` (0 for a block that holds its memory whole).
    pub(super) fn pieces_end(&self, block: &HostBlock) -> u64 {
        lock(&block.pages.pieces.0)
            .as_ref()
            .and_then(|m| m.last_key_value().map(|(&o, &s)| o + s))
            .unwrap_or(0)
    }

    /// A shrink of `block` to `new` bytes: the pieces past the page holding the new end go.
    pub(super) fn pieces_cut(&self, block: &HostBlock, new: u64) {
        let cut = self.grid().ceil(new);
        if let Some(map) = lock(&block.pages.pieces.0).as_mut() {
            map.retain(|&o, _| o < cut);
        }
    }
}
