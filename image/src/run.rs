//! Running a pipeline on one frame, written once for every host pixel type: 8-bit frames
//! ([`Pipeline::run`]) and 16-bit ones ([`Pipeline::run_rgba16`]) differ only in their
//! [`Channel`], which names the edge format the frame is uploaded and downloaded in. The run
//! plans tiles within the budget and the device's largest binding, gathers each tile's input
//! region with its halo, runs the chain stage by stage (each stage in the format
//! [`Pipeline::stage_formats`] gives it, a leading `linear` and trailing `srgb` fused into
//! their neighbours where `fuse.rs` says so) and scatters the tile's output.

use std::time::Instant;

use super::ops::Rect;
use super::stages::{Geometry, Kernel};
use super::{FrameReport, Pipeline};
use vramkit::backend::Backend;
use vramkit::transfers::host_zeroed;
use vramkit::{AllocDesc, BufferHandle, Context};
use vramkit::{Error, Result};
use vramkit_kernels::image::{ImageView, PixelFormat, ResizeRegion};

/// A channel of host frames: `u8` for RGBA8, `u16` for RGBA16 (four per pixel, rows packed).
pub(super) trait Channel: vramkit::bytemuck::Pod + Default {
    /// The frame's format on the device, at the run's edges.
    const FORMAT: PixelFormat;
    /// The format as messages name it.
    const NAME: &'static str;
}

impl Channel for u8 {
    const FORMAT: PixelFormat = PixelFormat::Rgba8;
    const NAME: &'static str = "RGBA8";
}

impl Channel for u16 {
    const FORMAT: PixelFormat = PixelFormat::Rgba16;
    const NAME: &'static str = "RGBA16";
}

/// An empty host buffer with room for `len` bytes of `T`, allocated fallibly, and its length
/// in `T`.
///
/// # Errors
/// [`Error::HostOutOfMemory`] naming the bytes and `what` they were for when the host cannot
/// allocate them.
fn host_buffer<T>(len: u64, what: &'static str) -> Result<(Vec<T>, usize)> {
    let refused = || Error::HostOutOfMemory {
        requested: len,
        what: format!("{what}; use smaller frames (a smaller input or resize)"),
    };
    let n = usize::try_from(len).map_err(|_| refused())? / size_of::<T>().max(1);
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused())?;
    Ok((v, n))
}

impl Pipeline {
    /// This pipeline with frames of `edge` at its ends: RGBA16 frames are filtered in RGBA32F
    /// whatever the working format, which would otherwise round them to 8 bits.
    pub(super) fn with_edge(&self, edge: PixelFormat) -> Pipeline {
        let mut p = self.clone();
        p.edge = edge;
        if edge == PixelFormat::Rgba16 {
            p.working = PixelFormat::Rgba32F;
        }
        p
    }

    /// The bytes of an output frame of `T` channels.
    fn out_bytes<T: Channel>(&self) -> u64 {
        let [ow, oh] = self.output_size();
        u64::from(ow) * u64::from(oh) * T::FORMAT.bytes_per_pixel()
    }

    /// Runs the chain on a frame of `T` channels into a new output: see [`run`](Self::run).
    pub(super) fn run_frame<B: Backend, T: Channel>(
        &self,
        ctx: &Context<B>,
        input: &[T],
    ) -> Result<(Vec<T>, FrameReport)> {
        let mut out: Vec<T> = host_zeroed(
            self.out_bytes::<T>(),
            "the output frame; use smaller frames (a smaller input or resize)",
        )?;
        let report = self.run_frame_into(ctx, input, &mut out)?;
        Ok((out, report))
    }

    /// Runs the chain on a frame of `T` channels into `out`: see [`run_into`](Self::run_into).
    pub(super) fn run_frame_into<B: Backend, T: Channel>(
        &self,
        ctx: &Context<B>,
        input: &[T],
        out: &mut [T],
    ) -> Result<FrameReport> {
        if self.edge != T::FORMAT {
            return self.with_edge(T::FORMAT).run_frame_into(ctx, input, out);
        }
        let start = Instant::now();
        let bpp = T::FORMAT.bytes_per_pixel();
        let [w, h] = self.input_size();
        let in_bytes = u64::from(w) * u64::from(h) * bpp;
        let input: &[u8] = vramkit::bytemuck::cast_slice(input);
        if input.len() as u64 != in_bytes {
            return Err(Error::ShapeMismatch {
                expected: format!("an {} frame of {w}×{h} ({in_bytes} bytes)", T::NAME),
                actual: format!("{} bytes", input.len()),
            });
        }
        let [ow, oh] = self.output_size();
        let out_bytes = self.out_bytes::<T>();
        if size_of_val(out) as u64 != out_bytes {
            return Err(Error::ShapeMismatch {
                expected: format!(
                    "an output of {ow}×{oh} {} pixels ({out_bytes} bytes)",
                    T::NAME
                ),
                actual: format!("{} bytes", size_of_val(out)),
            });
        }
        // What the budget leaves: blocks with nothing in them count as free, since the
        // allocator reuses them and frees them itself when a request would pass the budget.
        // Trimming before every frame would make each frame's buffers new driver allocations;
        // the run trims only when the frame would not fit whole otherwise.
        let room = || {
            let s = ctx.stats();
            let limit = s.budget.unwrap_or(u64::MAX);
            // Staging is counted once, at its full capacity, below.
            let held = s
                .reserved
                .saturating_sub(s.cached_empty)
                .saturating_sub(s.staging);
            (
                limit,
                s,
                limit
                    .saturating_sub(held)
                    .saturating_sub(ctx.transfers().staging_capacity()),
            )
        };
        let (limit, mut stats, mut available) = room();
        let mut trimmed = false;
        let max_buffer = {
            let l = ctx.backend().limits();
            l.max_binding_size.min(l.max_block_size)
        };
        loop {
            let whole = self.plan_within(available, max_buffer).ok() == Some(self.output_size());
            if !whole && !trimmed {
                ctx.memory().trim()?;
                trimmed = true;
                (_, stats, available) = room();
            }
            let tile = self
                .plan_within(available, max_buffer)
                .map_err(|e| match e {
                    Error::OverBudget { requested, .. } => Error::OverBudget {
                        requested: requested.saturating_add(ctx.transfers().staging_capacity()),
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
                result = self.run_tile(ctx, input, *t, vramkit::bytemuck::cast_slice_mut(out));
                match result {
                    Ok(bytes) => tile_host = tile_host.max(bytes),
                    Err(_) => break,
                }
            }
            match result {
                Ok(_) => {
                    return Ok(FrameReport {
                        tile,
                        tiles: tiles.len(),
                        planned_bytes: self.worst_tile_bytes(tile),
                        host_bytes: out_bytes + tile_host,
                        seconds: start.elapsed().as_secs_f64(),
                    })
                }
                // Pool rounding made a tile miss its plan: plan for less and run again (tiles
                // give the same pixels at any size).
                Err(Error::OverBudget { .. }) if self.worst_tile_bytes(tile) > 1 << 16 => {
                    ctx.wait()?;
                    ctx.memory().trim()?;
                    available = self.worst_tile_bytes(tile) / 4 * 3;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs one output tile: `input` and `out` are whole frames of the edge format, as bytes.
    /// Returns the host bytes the tile's copies took.
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
        let bpp = self.edge.bytes_per_pixel() as usize;
        // The input region: the caller's frame as it is when the tile reads all of it, else
        // gathered row by row.
        let r0 = regions[0];
        let [w, h] = self.input_size();
        let mut host = 0;
        let src = alloc(live, "tile input", &r0, self.edge)?;
        if r0 == Rect::full(w, h) {
            ctx.upload(src.handle, input)?;
        } else {
            let row_in = r0.width() as usize * bpp;
            let (mut bytes, _) = host_buffer::<u8>(r0.area() * bpp as u64, "a tile's input")?;
            for y in r0.y0..r0.y1 {
                let at = (y as usize * w as usize + r0.x0 as usize) * bpp;
                let row = input.get(at..at + row_in).ok_or_else(|| outside(&r0))?;
                bytes.extend_from_slice(row);
            }
            ctx.upload(src.handle, &bytes)?;
            host += bytes.capacity() as u64;
        }
        let stages = self.stages();
        let mut cur = src;
        // A leading `linear` running fused: the uploaded frame is read as sRGB-encoded RGBA8.
        if let Some(first) = stages.first() {
            cur.format = first.from;
        }
        for stage in &stages {
            let (ri, rn) = (regions[stage.src], regions[stage.dst]);
            let next = alloc(live, "tile stage", &rn, stage.to)?;
            let origin = match stage.kernel {
                // The `2·dst` region the downscale reads, in the blur's source.
                Kernel::Area2(_) => {
                    let at = |out: u32, from: u32| {
                        (2 * u64::from(out))
                            .checked_sub(u64::from(from))
                            .and_then(|o| u32::try_from(o).ok())
                            .ok_or_else(|| outside(&ri))
                    };
                    [at(rn.x0, ri.x0)?, at(rn.y0, ri.y0)?]
                }
                _ => [rn.x0.saturating_sub(ri.x0), rn.y0.saturating_sub(ri.y0)],
            };
            // A resize's frames: op i's input and output sizes (a resize is op `stage.src`).
            let size = |i: usize| self.sizes.get(i).copied().unwrap_or_default();
            let at = Geometry {
                origin,
                resize: ResizeRegion {
                    full_src: size(stage.src),
                    full_dst: size(stage.src + 1),
                    src_origin: [ri.x0, ri.y0],
                    dst_origin: [rn.x0, rn.y0],
                },
            };
            self.launch(ctx, stage, (&cur, &next), &at)?;
            retire(live, &cur)?;
            cur = next;
        }
        let rn = regions[regions.len() - 1];
        let last = cur;
        // The output region: straight into the caller's frame when the tile is all of it.
        let [ow, oh] = self.output_size();
        if rn == Rect::full(ow, oh) {
            ctx.transfers().download_into(last.handle, 0, out)?;
            return Ok(host);
        }
        let tile = ctx.download(last.handle)?;
        let row_bytes = rn.width() as usize * bpp;
        for (j, y) in (rn.y0..rn.y1).enumerate() {
            let at = (y as usize * ow as usize + rn.x0 as usize) * bpp;
            let dst = out
                .get_mut(at..at + row_bytes)
                .ok_or_else(|| outside(&rn))?;
            let src = tile
                .get(j * row_bytes..(j + 1) * row_bytes)
                .ok_or_else(|| outside(&rn))?;
            dst.copy_from_slice(src);
        }
        Ok(host + tile.len() as u64)
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
            match host_zeroed::<u8>(len, "the output frame") {
                Err(e @ Error::HostOutOfMemory { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(&len.to_string()), "{msg}");
                    assert!(msg.contains("output frame"), "{msg}");
                }
                other => panic!("{len} bytes: expected HostOutOfMemory, got {other:?}"),
            }
        }
        assert_eq!(
            host_zeroed::<u8>(10, "ten").expect("ten bytes"),
            vec![0; 10]
        );
        assert_eq!(
            host_zeroed::<u16>(10, "ten").expect("ten bytes"),
            vec![0; 5]
        );
    }
}
