//! Running a chain of operations on a frame within the context's budget: whole when its working
//! set fits, else in tiles whose inputs carry the halos the chain needs, so the output is the
//! same either way.

use std::time::Instant;

use super::ops::{Op, Rect};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::kernels::image::{
    blur, color, pack_rgba8, resize_region, unpack_rgba8, Blur, ImageView, PixelFormat,
    ResizeRegion,
};
use crate::{AllocDesc, BufferHandle, Context};

/// A chain of operations for frames of one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    ops: Vec<Op>,
    /// Image size before each op, and after the last.
    sizes: Vec<[u32; 2]>,
    /// Format of the frames between operations.
    working: PixelFormat,
}

/// The smallest tile side the planner tries.
const MIN_TILE: u32 = 16;
/// Allowance per allocation for rounding to the offset alignment.
const ALIGN_SLACK: u64 = 256;

/// How one frame was run.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameReport {
    /// Output tile size (the whole output when untiled).
    pub tile: [u32; 2],
    /// Tiles run.
    pub tiles: usize,
    /// Device bytes one tile was planned to need (working set, staging excluded).
    pub planned_bytes: u64,
    /// Wall time of the frame, seconds.
    pub seconds: f64,
}

impl Pipeline {
    /// A pipeline for frames of `input` size.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for an empty frame or chain.
    pub fn new(ops: Vec<Op>, input: [u32; 2]) -> Result<Self> {
        if input[0] == 0 || input[1] == 0 || ops.is_empty() {
            return Err(Error::ShapeMismatch {
                expected: "a frame of at least 1×1 and at least one operation".into(),
                actual: format!("{}×{} with {} operations", input[0], input[1], ops.len()),
            });
        }
        let mut sizes = vec![input];
        for op in &ops {
            let last = sizes[sizes.len() - 1];
            sizes.push(op.output_size(last));
        }
        Ok(Self {
            ops,
            sizes,
            working: PixelFormat::Rgba32F,
        })
    }

    /// Holds frames between operations in `format`. `Rgba32F` (the default) keeps full
    /// precision; `Rgba8` moves and holds a quarter of the bytes and rounds to 8 bits after each
    /// operation (each still computes in f32).
    pub fn with_working_format(mut self, format: PixelFormat) -> Self {
        self.working = format;
        self
    }

    /// The format of the frames between operations.
    pub fn working_format(&self) -> PixelFormat {
        self.working
    }

    /// The output frame's size.
    pub fn output_size(&self) -> [u32; 2] {
        self.sizes[self.sizes.len() - 1]
    }

    /// For an output region, the region each stage must hold (input first).
    pub fn regions(&self, out: Rect) -> Vec<Rect> {
        let mut regions = vec![out; self.ops.len() + 1];
        for i in (0..self.ops.len()).rev() {
            regions[i] = self.ops[i].input_region(regions[i + 1], self.sizes[i]);
        }
        regions
    }

    /// Device bytes a tile of the output needs at its peak: its input and output stages in the
    /// working format (plus the RGBA8 input and output around RGBA32F work), and a blur's RGBA32F
    /// intermediate.
    pub fn tile_bytes(&self, out: Rect) -> u64 {
        let r = self.regions(out);
        let bytes = |rect: &Rect, f: PixelFormat| rect.area() * f.bytes_per_pixel() + ALIGN_SLACK;
        let stage = |rect: &Rect| bytes(rect, self.working);
        let rgba8 = self.working == PixelFormat::Rgba8;
        let mut peak = if rgba8 {
            stage(&r[0])
        } else {
            bytes(&r[0], PixelFormat::Rgba8) + stage(&r[0])
        };
        for (i, op) in self.ops.iter().enumerate() {
            let tmp = if op.radius() > 0 {
                u64::from(r[i + 1].width()) * u64::from(r[i].height()) * 16 + 2 * ALIGN_SLACK
            } else {
                0
            };
            peak = peak.max(stage(&r[i]) + stage(&r[i + 1]) + tmp);
        }
        let n = r.len() - 1;
        if rgba8 {
            peak
        } else {
            peak.max(stage(&r[n]) + bytes(&r[n], PixelFormat::Rgba8))
        }
    }

    /// The output tiles of size `tile` covering the output, row by row.
    pub fn tiles(&self, tile: [u32; 2]) -> Vec<Rect> {
        let [w, h] = self.output_size();
        let mut v = Vec::new();
        for y0 in (0..h).step_by(tile[1] as usize) {
            for x0 in (0..w).step_by(tile[0] as usize) {
                v.push(Rect {
                    x0,
                    y0,
                    x1: (x0 + tile[0]).min(w),
                    y1: (y0 + tile[1]).min(h),
                });
            }
        }
        v
    }

    /// The peak of the worst tile of size `tile` (an interior one, with full halos).
    fn worst_tile_bytes(&self, tile: [u32; 2]) -> u64 {
        let [w, h] = self.output_size();
        let x0 = (w - tile[0]) / 2;
        let y0 = (h - tile[1]) / 2;
        self.tile_bytes(Rect {
            x0,
            y0,
            x1: x0 + tile[0],
            y1: y0 + tile[1],
        })
    }

    /// The largest tile (fewest passes) whose working set fits `available` bytes: the whole
    /// output if it fits, else halving the longer side.
    ///
    /// # Errors
    /// [`Error::OverBudget`] when not even a 16×16 tile fits, with the bytes that one needs.
    pub fn plan(&self, available: u64) -> Result<[u32; 2]> {
        let mut tile = self.output_size();
        loop {
            let need = self.worst_tile_bytes(tile);
            if need <= available {
                return Ok(tile);
            }
            if tile[0] <= MIN_TILE && tile[1] <= MIN_TILE {
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
            tile[i] = tile[i].div_ceil(2).max(MIN_TILE.min(tile[i]));
        }
    }

    /// Runs the chain on an RGBA8 frame (rows packed) within the context's budget, tiling when
    /// the whole frame does not fit. Returns the RGBA8 output and how it ran.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `input` is not an RGBA8 frame of the pipeline's size;
    /// [`Error::OverBudget`] with the smallest tile's needs when even that does not fit.
    pub fn run<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u8],
    ) -> Result<(Vec<u8>, FrameReport)> {
        let start = Instant::now();
        let [w, h] = self.sizes[0];
        if input.len() as u64 != u64::from(w) * u64::from(h) * 4 {
            return Err(Error::ShapeMismatch {
                expected: format!(
                    "an RGBA8 frame of {w}×{h} ({} bytes)",
                    u64::from(w) * u64::from(h) * 4
                ),
                actual: format!("{} bytes", input.len()),
            });
        }
        ctx.trim()?;
        let stats = ctx.stats();
        let limit = stats.budget.unwrap_or(u64::MAX);
        let mut available = limit
            .saturating_sub(stats.reserved)
            .saturating_sub(ctx.staging_capacity());
        let [ow, oh] = self.output_size();
        let mut out = vec![0u8; ow as usize * oh as usize * 4];
        loop {
            let tile = self.plan(available).map_err(|e| match e {
                Error::OverBudget { requested, .. } => Error::OverBudget {
                    requested: requested + ctx.staging_capacity(),
                    limit,
                    in_use: stats.in_use,
                    reserved: stats.reserved,
                    largest_free: 0,
                    fits_now: available,
                },
                e => e,
            })?;
            let tiles = self.tiles(tile);
            let mut result = Ok(());
            for t in &tiles {
                result = self.run_tile(ctx, input, *t, &mut out);
                if result.is_err() {
                    break;
                }
            }
            match result {
                Ok(()) => {
                    return Ok((
                        out,
                        FrameReport {
                            tile,
                            tiles: tiles.len(),
                            planned_bytes: self.worst_tile_bytes(tile),
                            seconds: start.elapsed().as_secs_f64(),
                        },
                    ))
                }
                // Pool rounding made a tile miss its plan: plan for less and run again (tiles
                // give the same pixels at any size).
                Err(Error::OverBudget { .. }) if self.worst_tile_bytes(tile) > 1 << 16 => {
                    ctx.wait()?;
                    ctx.trim()?;
                    available = self.worst_tile_bytes(tile) * 3 / 4;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn run_tile<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u8],
        out_rect: Rect,
        out: &mut [u8],
    ) -> Result<()> {
        let regions = self.regions(out_rect);
        let mut live: Vec<BufferHandle> = Vec::new();
        let result = self.run_tile_inner(ctx, input, &regions, out, &mut live);
        for h in live {
            ctx.release(h)?;
        }
        result
    }

    fn run_tile_inner<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u8],
        regions: &[Rect],
        out: &mut [u8],
        live: &mut Vec<BufferHandle>,
    ) -> Result<()> {
        let alloc =
            |live: &mut Vec<BufferHandle>, label: &'static str, r: &Rect, f: PixelFormat| {
                let h = ctx.alloc(
                    AllocDesc::new(label, r.area() * f.bytes_per_pixel())
                        .uninit()
                        .tag("frames"),
                )?;
                live.push(h);
                Ok::<_, Error>(ImageView::new(h, r.width(), r.height(), f))
            };
        // Each buffer goes as soon as the last kernel that reads it is recorded (its memory
        // returns when that kernel completes), so a tile holds two stages at a time.
        let retire = |live: &mut Vec<BufferHandle>, img: &ImageView| {
            live.retain(|&l| l != img.handle);
            ctx.release(img.handle)
        };
        // The input region, gathered row by row.
        let r0 = regions[0];
        let [w, _] = self.sizes[0];
        let mut bytes = Vec::with_capacity(r0.area() as usize * 4);
        for y in r0.y0..r0.y1 {
            let row = (y as usize * w as usize + r0.x0 as usize) * 4;
            bytes.extend_from_slice(&input[row..row + r0.width() as usize * 4]);
        }
        let src8 = alloc(live, "tile input", &r0, PixelFormat::Rgba8)?;
        ctx.upload(src8.handle, &bytes)?;
        let mut cur = src8;
        if self.working == PixelFormat::Rgba32F {
            cur = alloc(live, "tile stage", &r0, PixelFormat::Rgba32F)?;
            unpack_rgba8(ctx, &src8, &cur, [0, 0])?;
            retire(live, &src8)?;
        }
        for (i, op) in self.ops.iter().enumerate() {
            let (ri, rn) = (regions[i], regions[i + 1]);
            let next = alloc(live, "tile stage", &rn, self.working)?;
            let origin = [rn.x0.saturating_sub(ri.x0), rn.y0.saturating_sub(ri.y0)];
            match *op {
                Op::Blur { sigma } => blur(ctx, &cur, &next, origin, Blur::Gaussian { sigma })?,
                Op::BoxBlur { radius } => blur(ctx, &cur, &next, origin, Blur::Box { radius })?,
                Op::Resize { filter, .. } => {
                    let region = ResizeRegion {
                        full_src: self.sizes[i],
                        full_dst: self.sizes[i + 1],
                        src_origin: [ri.x0, ri.y0],
                        dst_origin: [rn.x0, rn.y0],
                    };
                    resize_region(ctx, &cur, &next, filter, region)?
                }
                _ => {
                    let c = op.color().ok_or_else(|| Error::Backend {
                        message: format!("{op:?} has no kernel (a vramkit bug)"),
                    })?;
                    color(ctx, &cur, &next, origin, c)?
                }
            };
            retire(live, &cur)?;
            cur = next;
        }
        let rn = regions[regions.len() - 1];
        let mut out8 = cur;
        if self.working == PixelFormat::Rgba32F {
            out8 = alloc(live, "tile output", &rn, PixelFormat::Rgba8)?;
            pack_rgba8(ctx, &cur, &out8, [0, 0])?;
            retire(live, &cur)?;
        }
        let tile = ctx.download(out8.handle)?;
        let [ow, _] = self.output_size();
        let row_bytes = rn.width() as usize * 4;
        for (j, y) in (rn.y0..rn.y1).enumerate() {
            let at = (y as usize * ow as usize + rn.x0 as usize) * 4;
            out[at..at + row_bytes].copy_from_slice(&tile[j * row_bytes..(j + 1) * row_bytes]);
        }
        Ok(())
    }
}
