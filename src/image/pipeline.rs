//! Running a chain of operations on a frame within the context's budget: whole when its working
//! set fits, else in tiles whose inputs carry the halos the chain needs, so the output is the
//! same either way.

use std::time::Instant;

use super::ops::{size_problem, Op, Rect};
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
    pub(super) ops: Vec<Op>,
    /// Image size before each op, and after the last.
    pub(super) sizes: Vec<[u32; 2]>,
    /// Format of the frames between operations.
    pub(super) working: PixelFormat,
}

/// How one frame was run.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameReport {
    /// Output tile size (the whole output when untiled).
    pub tile: [u32; 2],
    /// Tiles run.
    pub tiles: usize,
    /// Device bytes one tile was planned to need (working set, staging excluded).
    pub planned_bytes: u64,
    /// Host bytes the run allocated at its peak: the RGBA8 output frame and one tile's RGBA8
    /// input and output copies (the caller's input frame excluded).
    pub host_bytes: u64,
    /// Wall time of the frame, seconds.
    pub seconds: f64,
}

/// An empty host buffer with room for `len` bytes, allocated fallibly, and `len` as a `usize`.
///
/// # Errors
/// [`Error::HostOutOfMemory`] naming the bytes and `what` they were for when the host cannot
/// allocate them.
fn host_buffer(len: u64, what: &'static str) -> Result<(Vec<u8>, usize)> {
    let refused = || Error::HostOutOfMemory {
        requested: len,
        what: format!("{what}; use smaller frames (a smaller input or resize)"),
    };
    let n = usize::try_from(len).map_err(|_| refused())?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused())?;
    Ok((v, n))
}

/// `len` zero bytes on the host, allocated fallibly.
///
/// # Errors
/// As [`host_buffer`].
pub(crate) fn host_zeroed(len: u64, what: &'static str) -> Result<Vec<u8>> {
    let (mut v, n) = host_buffer(len, what)?;
    v.resize(n, 0);
    Ok(v)
}

/// Bytes of an RGBA8 frame of `size`, if this host can address them.
fn rgba8_bytes(size: [u32; 2]) -> Option<u64> {
    let bytes = u64::from(size[0]) * u64::from(size[1]) * 4;
    usize::try_from(bytes)
        .ok()
        .filter(|&b| isize::try_from(b).is_ok())
        .map(|_| bytes)
}

impl Pipeline {
    /// A pipeline for frames of `input` size. Each op is [validated](Op::validate) and every
    /// stage's frame is checked against [`MAX_SIDE`](super::MAX_SIDE) and
    /// [`MAX_FRAME_PIXELS`](super::MAX_FRAME_PIXELS), so that [`run`](Self::run) never starts
    /// what can not be held.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for an empty frame or chain; [`Error::InvalidParameter`] for an
    /// input larger than the limits (naming them) or an op whose parameters are out of range
    /// (naming the op, e.g. `resize:0x0`).
    ///
    /// ```
    /// use vramkit::image::{Op, Pipeline};
    /// use vramkit::kernels::image::ResizeFilter;
    /// let p = Pipeline::new(vec![Op::Linear], [3840, 2160])?;
    /// assert_eq!(p.output_size(), [3840, 2160]);
    /// let huge = Op::Resize { width: 100_000, height: 100_000, filter: ResizeFilter::Bilinear };
    /// assert!(Pipeline::new(vec![huge], [64, 64]).is_err());
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn new(ops: Vec<Op>, input: [u32; 2]) -> Result<Self> {
        if input[0] == 0 || input[1] == 0 || ops.is_empty() {
            return Err(Error::ShapeMismatch {
                expected: "a frame of at least 1×1 and at least one operation".into(),
                actual: format!("{}×{} with {} operations", input[0], input[1], ops.len()),
            });
        }
        if let Some((i, why)) = size_problem(input) {
            return Err(Error::InvalidParameter {
                name: ["input width", "input height", "input size"][i.min(2)],
                value: format!("{}x{}", input[0], input[1]),
                reason: why,
            });
        }
        let mut sizes = Vec::with_capacity(ops.len() + 1);
        let mut size = input;
        sizes.push(size);
        for op in &ops {
            op.validate()?;
            size = op.output_size(size);
            sizes.push(size);
        }
        for (what, size) in [("input", input), ("output", size)] {
            if rgba8_bytes(size).is_none() {
                return Err(Error::InvalidParameter {
                    name: if what == "input" {
                        "input size"
                    } else {
                        "output size"
                    },
                    value: format!("{}x{}", size[0], size[1]),
                    reason: "its RGBA8 frame is more bytes than this host can address",
                });
            }
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

    /// The operations.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The input frame's size.
    pub fn input_size(&self) -> [u32; 2] {
        self.sizes.first().copied().unwrap_or_default()
    }

    /// The output frame's size.
    pub fn output_size(&self) -> [u32; 2] {
        self.sizes.last().copied().unwrap_or_default()
    }

    /// Runs the chain on an RGBA8 frame (rows packed) within the context's budget, tiling when
    /// the whole frame does not fit or a buffer would pass the device's largest binding. Returns
    /// the RGBA8 output and how it ran.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] if `input` is not an RGBA8 frame of the pipeline's size;
    /// [`Error::OverBudget`] with the smallest tile's needs when even that does not fit;
    /// [`Error::TooLarge`] when even the smallest tile needs a buffer past the device's largest
    /// binding; [`Error::InvalidParameter`] naming the bytes when the host can not allocate the
    /// output frame.
    pub fn run<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u8],
    ) -> Result<(Vec<u8>, FrameReport)> {
        let start = Instant::now();
        let [w, h] = self.input_size();
        let in_bytes = u64::from(w) * u64::from(h) * 4;
        if input.len() as u64 != in_bytes {
            return Err(Error::ShapeMismatch {
                expected: format!("an RGBA8 frame of {w}×{h} ({in_bytes} bytes)"),
                actual: format!("{} bytes", input.len()),
            });
        }
        let [ow, oh] = self.output_size();
        let out_bytes = u64::from(ow) * u64::from(oh) * 4;
        let mut out = host_zeroed(out_bytes, "the RGBA8 output frame")?;
        ctx.trim()?;
        let stats = ctx.stats();
        let limit = stats.budget.unwrap_or(u64::MAX);
        let mut available = limit
            .saturating_sub(stats.reserved)
            .saturating_sub(ctx.staging_capacity());
        let max_buffer = {
            let l = ctx.backend().limits();
            l.max_binding_size.min(l.max_block_size)
        };
        loop {
            let tile = self
                .plan_within(available, max_buffer)
                .map_err(|e| match e {
                    Error::OverBudget { requested, .. } => Error::OverBudget {
                        requested: requested.saturating_add(ctx.staging_capacity()),
                        limit,
                        in_use: stats.in_use,
                        reserved: stats.reserved,
                        largest_free: 0,
                        fits_now: available,
                    },
                    e => e,
                })?;
            let tiles = self.tiles(tile);
            let mut result = Ok(0);
            let mut tile_host = 0;
            for t in &tiles {
                result = self.run_tile(ctx, input, *t, &mut out);
                match result {
                    Ok(bytes) => tile_host = tile_host.max(bytes),
                    Err(_) => break,
                }
            }
            match result {
                Ok(_) => {
                    return Ok((
                        out,
                        FrameReport {
                            tile,
                            tiles: tiles.len(),
                            planned_bytes: self.worst_tile_bytes(tile),
                            host_bytes: out_bytes + tile_host,
                            seconds: start.elapsed().as_secs_f64(),
                        },
                    ))
                }
                // Pool rounding made a tile miss its plan: plan for less and run again (tiles
                // give the same pixels at any size).
                Err(Error::OverBudget { .. }) if self.worst_tile_bytes(tile) > 1 << 16 => {
                    ctx.wait()?;
                    ctx.trim()?;
                    available = self.worst_tile_bytes(tile) / 4 * 3;
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
    ) -> Result<u64> {
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
    ) -> Result<u64> {
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
        let [w, _] = self.input_size();
        let row_in = r0.width() as usize * 4;
        let (mut bytes, _) = host_buffer(r0.area() * 4, "a tile's RGBA8 input")?;
        for y in r0.y0..r0.y1 {
            let at = (y as usize * w as usize + r0.x0 as usize) * 4;
            let row = input.get(at..at + row_in).ok_or_else(|| outside(&r0))?;
            bytes.extend_from_slice(row);
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
                    let c = op.color().ok_or_else(|| Error::Internal {
                        message: format!("{op:?} has no kernel"),
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
            let dst = out
                .get_mut(at..at + row_bytes)
                .ok_or_else(|| outside(&rn))?;
            let src = tile
                .get(j * row_bytes..(j + 1) * row_bytes)
                .ok_or_else(|| outside(&rn))?;
            dst.copy_from_slice(src);
        }
        Ok(bytes.capacity() as u64 + tile.len() as u64)
    }
}

/// A region that does not fit its frame: a planner bug, reported rather than panicking.
fn outside(r: &Rect) -> Error {
    Error::Internal {
        message: format!("tile region {r:?} lies outside its frame"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_buffers_the_host_can_not_hold_are_typed_errors() {
        for len in [u64::MAX, isize::MAX as u64 + 1, 1 << 62] {
            match host_zeroed(len, "the RGBA8 output frame") {
                Err(e @ Error::HostOutOfMemory { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(&len.to_string()), "{msg}");
                    assert!(msg.contains("output frame"), "{msg}");
                }
                other => panic!("{len} bytes: expected HostOutOfMemory, got {other:?}"),
            }
        }
        assert_eq!(host_zeroed(10, "ten").expect("ten bytes"), vec![0; 10]);
    }
}
