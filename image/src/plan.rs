//! Planning a pipeline's tiles: the device bytes a tile of the output needs at its peak, its
//! largest single buffer, and the largest tile that fits a budget and the device's limits.

use super::ops::{Op, Rect};
use super::Pipeline;
use vramkit::{Error, Result};
use vramkit_kernels::image::blur_intermediate_bytes;
use vramkit_kernels::image::PixelFormat;

/// The smallest tile side the planner tries.
const MIN_TILE: u32 = 16;
/// Allowance per allocation for rounding to the offset alignment.
const ALIGN_SLACK: u64 = 256;

/// Bytes of `rect` in `format`, with the alignment allowance (saturating: a rectangle past
/// any frame only plans as too large).
fn bytes(rect: &Rect, format: PixelFormat) -> u64 {
    rect.area()
        .saturating_mul(format.bytes_per_pixel())
        .saturating_add(ALIGN_SLACK)
}

/// Bytes of a blur's RGBA32F intermediate (the output's columns of the input's rows) in a
/// buffer.
fn blur_tmp(out: &Rect, input: &Rect) -> u64 {
    (u64::from(out.width()) * u64::from(input.height())).saturating_mul(16)
}

/// Bytes the budget is charged for that intermediate, in a buffer or a texture (rows padded).
fn blur_tmp_planned(out: &Rect, input: &Rect) -> u64 {
    blur_intermediate_bytes(out.width(), input.height())
}

impl Pipeline {
    /// For an output region, the region each stage must hold (input first).
    pub fn regions(&self, out: Rect) -> Vec<Rect> {
        let mut regions = vec![out; self.ops.len() + 1];
        for i in (0..self.ops.len()).rev() {
            regions[i] = self.ops[i].input_region(regions[i + 1], self.sizes[i]);
        }
        regions
    }

    /// The format of each stage, the input's first, then each op's output: the working format,
    /// except that an RGBA8 chain holds the stages from `linear` up to the `srgb` that ends
    /// them in RGBA32F (8 bits of linear light lose 8–13 levels in the shadows).
    pub fn stage_formats(&self) -> Vec<PixelFormat> {
        let mut linear = false;
        let mut formats = vec![self.working];
        for op in &self.ops {
            match op {
                Op::Linear => linear = true,
                Op::Srgb => linear = false,
                _ => {}
            }
            formats.push(if linear && self.working == PixelFormat::Rgba8 {
                PixelFormat::Rgba32F
            } else {
                self.working
            });
        }
        formats
    }

    /// Device bytes a tile of the output needs at its peak: each op's input and output stages
    /// in their [formats](Self::stage_formats) with a blur's RGBA32F intermediate, and the
    /// frame in the edge format (RGBA8, or RGBA16 for 16-bit runs) next to the first and last
    /// stages where those differ from it.
    pub fn tile_bytes(&self, out: Rect) -> u64 {
        let r = self.regions(out);
        let f = self.stage_formats();
        let stage = |i: usize| bytes(&r[i], f[i]);
        let edge = |i: usize| {
            if f[i] == self.edge {
                0
            } else {
                bytes(&r[i], self.edge)
            }
        };
        let n = r.len() - 1;
        let mut peak = stage(0).saturating_add(edge(0));
        for (i, op) in self.ops.iter().enumerate() {
            let tmp = if op.radius() > 0 {
                blur_tmp_planned(&r[i + 1], &r[i]).saturating_add(2 * ALIGN_SLACK)
            } else {
                0
            };
            peak = peak.max(stage(i).saturating_add(stage(i + 1)).saturating_add(tmp));
        }
        peak.max(stage(n).saturating_add(edge(n)))
    }

    /// The largest single buffer a tile of the output allocates: a stage in its format, the
    /// frame in the edge format, or a blur's RGBA32F intermediate (each must fit one kernel
    /// binding).
    pub fn largest_buffer(&self, out: Rect) -> u64 {
        let r = self.regions(out);
        let n = r.len() - 1;
        let edges =
            [&r[0], &r[n]].map(|rect| rect.area().saturating_mul(self.edge.bytes_per_pixel()));
        let stages = r
            .iter()
            .zip(self.stage_formats())
            .map(|(rect, f)| rect.area().saturating_mul(f.bytes_per_pixel()))
            .chain(edges);
        let blurs = self.ops.iter().enumerate().map(|(i, op)| {
            if op.radius() > 0 {
                blur_tmp(&r[i + 1], &r[i])
            } else {
                0
            }
        });
        stages.chain(blurs).max().unwrap_or(0)
    }

    /// The output tiles of size `tile` covering the output, row by row (a side of 0 counts as
    /// 1).
    pub fn tiles(&self, tile: [u32; 2]) -> Vec<Rect> {
        let [w, h] = self.output_size();
        let [tw, th] = tile.map(|t| t.max(1));
        let mut v = Vec::new();
        for y0 in (0..h).step_by(th as usize) {
            for x0 in (0..w).step_by(tw as usize) {
                v.push(Rect {
                    x0,
                    y0,
                    x1: x0.saturating_add(tw).min(w),
                    y1: y0.saturating_add(th).min(h),
                });
            }
        }
        v
    }

    /// An interior tile of size `tile` (with full halos): the worst case of its size.
    fn worst_tile(&self, tile: [u32; 2]) -> Rect {
        let [w, h] = self.output_size();
        let x0 = w.saturating_sub(tile[0]) / 2;
        let y0 = h.saturating_sub(tile[1]) / 2;
        Rect {
            x0,
            y0,
            x1: x0.saturating_add(tile[0]).min(w),
            y1: y0.saturating_add(tile[1]).min(h),
        }
    }

    /// The peak of the worst tile of size `tile`.
    pub(super) fn worst_tile_bytes(&self, tile: [u32; 2]) -> u64 {
        self.tile_bytes(self.worst_tile(tile))
    }

    /// The largest tile (fewest passes) whose working set fits `available` bytes: the whole
    /// output if it fits, else halving the longer side.
    ///
    /// # Errors
    /// [`Error::OverBudget`] when not even a 16×16 tile fits, with the bytes that one needs.
    ///
    /// ```
    /// use vramkit_image::{parse_chain, Pipeline};
    /// let p = Pipeline::new(parse_chain("blur:sigma=2")?, [3840, 2160])?;
    /// let tile = p.plan(64 << 20)?;
    /// assert!(tile[0] < 3840 || tile[1] < 2160);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn plan(&self, available: u64) -> Result<[u32; 2]> {
        self.plan_within(available, u64::MAX)
    }

    /// As [`plan`](Self::plan), with every buffer of a tile also at most `max_buffer` bytes (the
    /// device's largest binding).
    ///
    /// # Errors
    /// [`Error::OverBudget`] as [`plan`](Self::plan); [`Error::TooLarge`] when even a 1×1
    /// tile needs a buffer larger than `max_buffer` (tiles go below 16×16 for the binding,
    /// not for the budget: a resize to a thumbnail reads a large region for each output pixel).
    ///
    /// ```
    /// use vramkit_image::{parse_chain, Pipeline};
    /// let p = Pipeline::new(parse_chain("blur:sigma=2")?, [3840, 2160])?;
    /// let tile = p.plan_within(u64::MAX, 64 << 20)?;
    /// assert!(p.tiles(tile).iter().all(|t| p.largest_buffer(*t) <= 64 << 20));
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn plan_within(&self, available: u64, max_buffer: u64) -> Result<[u32; 2]> {
        let mut tile = self.output_size();
        loop {
            let need = self.worst_tile_bytes(tile);
            let largest = self.largest_buffer(self.worst_tile(tile));
            if need <= available && largest <= max_buffer {
                return Ok(tile);
            }
            // Budgets stop at 16×16 tiles; a binding too small for one (a resize that shrinks
            // a large frame to a thumbnail reads a large region for each output pixel) takes
            // tiles down to one output pixel.
            let floor = if largest > max_buffer { 1 } else { MIN_TILE };
            if tile[0] <= floor && tile[1] <= floor {
                if largest > max_buffer {
                    return Err(Error::TooLarge {
                        label: format!("the input region of a {}×{} tile", tile[0], tile[1]),
                        requested: largest,
                        max: max_buffer,
                        unit: "bytes",
                        what: "the largest buffer one kernel binding can cover; even one \
                               output pixel reads more than that: give a larger output size",
                    });
                }
                return Err(Error::OverBudget {
                    requested: need,
                    limit: available,
                    in_use: 0,
                    reserved: 0,
                    largest_free: 0,
                    fits_now: available,
                });
            }
            let i = usize::from(tile[1] > tile[0]);
            tile[i] = tile[i].div_ceil(2).max(floor.min(tile[i]));
        }
    }
}
