//! [`PageGrid`]: where the pages of a growable block lie, as the backend maps them and the
//! memory manager gives them back and moves them.
//!
//! A page costs the driver about the same whatever its size (a `cuMemCreate`, `cuMemMap` and
//! `cuMemUnmap` each), while memory is held by whole pages: small pages follow a small live
//! set closely, and large ones spare calls where the live set is large. A growing grid has
//! both: pages of the base size below `1024 × base` bytes of a block, then pages twice the size
//! for each doubling of the offset (with a base of 2 MiB: 2 MiB pages up to 2 GiB, 4 MiB up to
//! 4 GiB, 8 MiB up to 8 GiB, ...), up to [`PageGrid::MAX_PAGE`]. Every region past the first
//! holds 512 pages below the cap (more past it), so a page is at most 1/512 of the memory below
//! it. On the stored traces of
//! PyTorch programs this keeps the memory held within the same 1.02 × the live peak as 2 MiB
//! pages everywhere, in 1.4 to 2.9 times fewer page calls where the live set is large
//! (BENCHMARKS.md); pages growing twice as fast pass 1.02.

use std::ops::Range;

/// The pages of a block: the size of each, as a function of its offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageGrid {
    base: u64,
    grows: bool,
}

/// Pages in each region of a growing grid past the first (which holds twice as many).
const PAGES_PER_REGION: u64 = 512;

impl PageGrid {
    /// The most a growing grid's pages reach: 1 GiB (from 512 GiB on with 2 MiB pages).
    pub const MAX_PAGE: u64 = 1 << 30;

    /// Pages of `base` bytes everywhere. `base` must not be 0 (it is taken as 1).
    pub fn fixed(base: u64) -> Self {
        Self {
            base: base.max(1),
            grows: false,
        }
    }

    /// Pages of `base` bytes below `1024 × base`, then twice the size for each doubling of
    /// the offset, up to [`MAX_PAGE`](Self::MAX_PAGE) (the largest power-of-two multiple of
    /// `base` within it; `base` where it is larger).
    pub fn growing(base: u64) -> Self {
        Self {
            base: base.max(1),
            grows: true,
        }
    }

    /// The smallest page: the size of those at the start of a block.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Whether pages grow with the offset.
    pub fn grows(&self) -> bool {
        self.grows
    }

    /// Where the first region ends: pages grow past it.
    fn flat_end(&self) -> u64 {
        self.base.saturating_mul(2 * PAGES_PER_REGION)
    }

    /// The page that holds byte `offset`: its start and size.
    pub fn page_at(&self, offset: u64) -> Range<u64> {
        let size = self.size_at(offset);
        let start = offset / size * size;
        start..start.saturating_add(size)
    }

    /// The size of the page that holds byte `offset`.
    pub fn size_at(&self, offset: u64) -> u64 {
        let flat = self.flat_end();
        if !self.grows || offset < flat {
            return self.base;
        }
        // Region k (k ≥ 1) is `flat << (k - 1) .. flat << k`, with pages of `base << k`, up to
        // the largest power-of-two multiple of `base` within the cap: each region's start,
        // `base << (k + 9)`, is then a boundary of both page sizes that meet there.
        let k = (offset / flat).ilog2() + 1;
        self.base << k.min(self.doublings())
    }

    /// How many times a page may double: the largest `j` with `base << j` at most
    /// [`MAX_PAGE`](Self::MAX_PAGE) (0 where `base` is larger).
    fn doublings(&self) -> u32 {
        (Self::MAX_PAGE / self.base).checked_ilog2().unwrap_or(0)
    }

    /// Where the region of pages of one size that holds `offset` ends (`u64::MAX` for the last).
    pub fn region_end(&self, offset: u64) -> u64 {
        let flat = self.flat_end();
        if !self.grows {
            return u64::MAX;
        }
        if offset < flat {
            return flat;
        }
        let k = (offset / flat).ilog2() + 1;
        1u64.checked_shl(k)
            .and_then(|m| flat.checked_mul(m))
            .unwrap_or(u64::MAX)
    }

    /// `offset` rounded down to the start of its page.
    pub fn floor(&self, offset: u64) -> u64 {
        self.page_at(offset).start
    }

    /// `offset` rounded up to a page boundary (itself where it is one).
    pub fn ceil(&self, offset: u64) -> u64 {
        let p = self.page_at(offset);
        if p.start == offset {
            offset
        } else {
            p.end
        }
    }

    /// Whether `offset` lies on a page boundary.
    pub fn is_boundary(&self, offset: u64) -> bool {
        self.floor(offset) == offset
    }

    /// The pages of `range` (whose ends lie on page boundaries), in order.
    pub fn pages(&self, range: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let mut at = range.start;
        std::iter::from_fn(move || {
            if at >= range.end {
                return None;
            }
            let end = self.page_at(at).end.min(range.end);
            let page = at..end;
            at = end;
            Some(page)
        })
    }

    /// `range` cut where the page size changes: pieces whose pages are all of one size.
    pub fn regions(&self, range: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let mut at = range.start;
        std::iter::from_fn(move || {
            if at >= range.end {
                return None;
            }
            let end = self.region_end(at).min(range.end);
            let piece = at..end;
            at = end;
            Some(piece)
        })
    }

    /// How many pages `range` (whose ends lie on page boundaries) holds: the driver's calls
    /// that give it back, map it or move it are paid per page.
    pub fn count(&self, range: Range<u64>) -> u64 {
        self.regions(range)
            .map(|r| (r.end - r.start).div_ceil(self.size_at(r.start)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::PageGrid;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    #[test]
    fn a_fixed_grid_is_one_size() {
        let g = PageGrid::fixed(2 * MIB);
        assert_eq!(g.page_at(5 * MIB), 4 * MIB..6 * MIB);
        assert_eq!(g.size_at(100 * GIB), 2 * MIB);
        assert_eq!(g.region_end(7), u64::MAX);
        assert_eq!(
            (g.floor(3 * MIB), g.ceil(3 * MIB), g.ceil(4 * MIB)),
            (2 * MIB, 4 * MIB, 4 * MIB)
        );
    }

    /// Every page of a growing grid against a plain walk: sizes double at 2, 4, 8 GiB (base
    /// 2 MiB), pages tile the offsets with no gap, and each region holds 512 pages.
    #[test]
    fn a_growing_grid_tiles_the_offsets() {
        let g = PageGrid::growing(2 * MIB);
        assert_eq!(g.size_at(2 * GIB - 1), 2 * MIB);
        assert_eq!(g.size_at(2 * GIB), 4 * MIB);
        assert_eq!(g.size_at(4 * GIB), 8 * MIB);
        assert_eq!(g.size_at(8 * GIB - 1), 8 * MIB);
        assert_eq!(g.region_end(GIB), 2 * GIB);
        assert_eq!(g.region_end(5 * GIB), 8 * GIB);
        let pages: Vec<_> = g.pages(0..64 * GIB).collect();
        let mut at = 0;
        for p in &pages {
            assert_eq!(p.start, at);
            assert_eq!(g.page_at(p.start), p.clone());
            assert_eq!(g.page_at(p.end - 1), p.clone());
            assert!(g.is_boundary(p.start) && !g.is_boundary(p.start + 1));
            at = p.end;
        }
        assert_eq!(at, 64 * GIB);
        // 1024 pages in the first region, 512 in each of 2-4, 4-8, 8-16, 16-32, 32-64 GiB.
        assert_eq!(pages.len(), 1024 + 5 * 512);
        assert_eq!(g.count(0..64 * GIB), pages.len() as u64);
        assert_eq!(g.ceil(2 * GIB + 1), 2 * GIB + 4 * MIB);
        assert_eq!(g.floor(4 * GIB + 9 * MIB), 4 * GIB + 8 * MIB);
        assert_eq!(g.count(2 * GIB - 4 * MIB..4 * GIB + 8 * MIB), 2 + 512 + 1);
        let cut: Vec<_> = g.regions(GIB..5 * GIB).collect();
        assert_eq!(cut, vec![GIB..2 * GIB, 2 * GIB..4 * GIB, 4 * GIB..5 * GIB]);
    }

    #[test]
    fn pages_stop_growing_at_the_cap() {
        let g = PageGrid::growing(2 * MIB);
        assert_eq!(g.size_at(u64::MAX), PageGrid::MAX_PAGE);
        assert_eq!(g.size_at(3 << 41), PageGrid::MAX_PAGE);
        assert!(g.is_boundary(u64::MAX / GIB * GIB));
        assert_eq!(g.region_end(u64::MAX - 1), u64::MAX);
        // A base past the cap stays the base.
        let big = PageGrid::growing(2 * GIB);
        assert_eq!(big.size_at(u64::MAX / 2), 2 * GIB);
        // An odd base doubles up to the cap's half at most, and its regions still tile.
        let odd = PageGrid::growing((1 << 29) + 1);
        assert_eq!(odd.size_at(u64::MAX), (1 << 29) + 1);
        let g3 = PageGrid::growing(3 * MIB);
        assert_eq!(g3.size_at(u64::MAX), 768 * MIB);
        for k in 1..40u32 {
            let Some(start) = (3 * GIB).checked_mul(1 << (k - 1)) else {
                break;
            };
            assert!(g3.is_boundary(start), "region {k} starts off the grid");
            assert_eq!(g3.page_at(start - 1).end, start);
        }
    }
}
