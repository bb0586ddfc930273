//! A tile's run as a list of kernel launches (stages), each reading one format and writing
//! another: the run walks them over a tile's regions, and [`Pipeline::prepare`] builds their
//! kernels before the first frame, all at once, each stage on a thread of its own, from frames
//! of a few pixels. A kernel's first build (NVRTC and the driver's compile on CUDA, the
//! pipeline on wgpu) takes tenths of a second, and a run would otherwise pay the builds one
//! after another on its first frame.

use super::ops::Op;
use super::Pipeline;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, Result};
use vramkit_kernels::image::{
    blur, blur_area2, color, convert, resize_region, Blur, ImageView, PixelFormat, ResizeRegion,
};

/// What a stage launches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kernel {
    /// A format conversion at the run's edges.
    Convert,
    /// Op `i` of the chain on its own.
    Op(usize),
    /// Op `i`'s blur and op `i + 1`'s exact 2× area downscale as one `blur_area2` (fuse.rs).
    Area2(Blur),
}

/// One launch of a tile's run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Stage {
    /// What it launches.
    pub kernel: Kernel,
    /// The format it reads.
    pub from: PixelFormat,
    /// The format it writes.
    pub to: PixelFormat,
    /// The index, in a tile's regions, of the region it reads.
    pub src: usize,
    /// The index of the region it writes.
    pub dst: usize,
}

/// Where a launch reads its source.
pub(super) struct Geometry {
    /// The destination's origin in the source.
    pub origin: [u32; 2],
    /// For a resize, the frames the regions belong to.
    pub resize: ResizeRegion,
}

/// The side of the frames [`Pipeline::prepare`] runs each stage on (halved by a downscale).
const SMALL: u32 = 32;

impl Pipeline {
    /// The launches of a tile's run, in order: a conversion from the edge format where the
    /// first stage's format differs (none where a leading `linear` runs fused), each op or
    /// fused pair, and a conversion back where the last does not write the edge's bytes.
    pub(super) fn stages(&self) -> Vec<Stage> {
        let formats = self.stage_formats();
        let fused = self.fused_ends();
        let n = self.ops.len();
        let run = usize::from(fused.first)..n - usize::from(fused.last);
        let mut stages = Vec::with_capacity(n + 2);
        let mut cur = self.edge;
        if fused.first {
            cur = PixelFormat::Srgba8;
        } else if formats[0] != self.edge {
            stages.push(Stage {
                kernel: Kernel::Convert,
                from: self.edge,
                to: formats[0],
                src: 0,
                dst: 0,
            });
            cur = formats[0];
        }
        // The format op i writes: its stage's, or sRGB-encoded RGBA8 where the trailing `srgb`
        // runs inside it.
        let format_after = |i: usize| {
            if fused.last && i + 1 == run.end {
                PixelFormat::Srgba8
            } else {
                formats[i + 1]
            }
        };
        let mut i = run.start;
        while i < run.end {
            let area2 = (i + 1 < run.end)
                .then(|| self.area2_at(i, cur, format_after(i + 1)))
                .flatten();
            let (kernel, to, dst) = match area2 {
                Some(b) => (Kernel::Area2(b), format_after(i + 1), i + 2),
                None => (Kernel::Op(i), format_after(i), i + 1),
            };
            stages.push(Stage {
                kernel,
                from: cur,
                to,
                src: i,
                dst,
            });
            cur = to;
            i = dst;
        }
        // An sRGB-encoded RGBA8 output is the RGBA8 edge's bytes.
        let edge_bytes =
            cur == self.edge || (cur == PixelFormat::Srgba8 && self.edge == PixelFormat::Rgba8);
        if !edge_bytes {
            stages.push(Stage {
                kernel: Kernel::Convert,
                from: cur,
                to: self.edge,
                src: n,
                dst: n,
            });
        }
        stages
    }

    /// Records `stage` from `src` into `dst`.
    pub(super) fn launch<B: Backend>(
        &self,
        ctx: &Context<B>,
        stage: &Stage,
        (src, dst): (&ImageView, &ImageView),
        at: &Geometry,
    ) -> Result<()> {
        match stage.kernel {
            Kernel::Convert => convert(ctx, src, dst, [0, 0]),
            Kernel::Area2(b) => blur_area2(ctx, src, dst, at.origin, b),
            Kernel::Op(i) => match self.ops[i] {
                Op::Blur { sigma } => blur(ctx, src, dst, at.origin, Blur::Gaussian { sigma }),
                Op::BoxBlur { radius } => blur(ctx, src, dst, at.origin, Blur::Box { radius }),
                Op::Resize { filter, .. } => resize_region(ctx, src, dst, filter, at.resize),
                op => {
                    let c = op.color().ok_or_else(|| vramkit::Error::Internal {
                        message: format!("{op:?} has no kernel"),
                    })?;
                    color(ctx, src, dst, at.origin, c)
                }
            },
        }
        .map(|_| ())
    }

    /// Builds the kernels a run of RGBA8 frames of this pipeline's size ([`run`](Self::run))
    /// launches on `ctx`, each stage on a thread of its own, and waits for them: the first
    /// frame then runs without waiting for builds one after another. Each stage runs once on a
    /// frame of a few pixels; where a run's choice of kernel depends on the tile's size (a
    /// blur's intermediate in a texture only where the texture fits the device, CUDA's staged
    /// blur pass only where the tile's rows fit its grid), a run of large tiles may still build
    /// one. Call it on a thread of its own to overlap the builds with decoding the first
    /// frames; a kernel that a run asks for while it is built waits for that build.
    ///
    /// # Errors
    /// The first error of a stage (a kernel that does not build, a budget too small even for
    /// a few pixels); a run would meet the same.
    pub fn prepare<B: Backend>(&self, ctx: &Context<B>) -> Result<()> {
        self.with_edge(PixelFormat::Rgba8).prepare_stages(ctx)
    }

    /// [`prepare`](Self::prepare) for runs of 16-bit frames
    /// ([`run_rgba16`](Self::run_rgba16)).
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare).
    pub fn prepare_rgba16<B: Backend>(&self, ctx: &Context<B>) -> Result<()> {
        self.with_edge(PixelFormat::Rgba16).prepare_stages(ctx)
    }

    fn prepare_stages<B: Backend>(&self, ctx: &Context<B>) -> Result<()> {
        let stages = self.stages();
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            // A stage without a thread of its own (the OS refused one) builds on this one.
            let threads: Vec<_> = stages
                .iter()
                .map(|stage| {
                    std::thread::Builder::new()
                        .spawn_scoped(s, move || self.prepare_stage(ctx, stage))
                        .map_err(|_| stage)
                })
                .collect();
            threads
                .into_iter()
                .map(|t| match t {
                    Ok(t) => t.join().unwrap_or_else(|_| {
                        Err(vramkit::Error::Internal {
                            message: "a kernel build panicked".into(),
                        })
                    }),
                    Err(stage) => self.prepare_stage(ctx, stage),
                })
                .collect()
        });
        results.into_iter().collect()
    }

    /// Runs `stage` once from a `SMALL`-pixel square into one of half its side (a downscale)
    /// or its side.
    fn prepare_stage<B: Backend>(&self, ctx: &Context<B>, stage: &Stage) -> Result<()> {
        let halves = matches!(stage.kernel, Kernel::Area2(_))
            || matches!(stage.kernel, Kernel::Op(i) if matches!(self.ops[i], Op::Resize { .. }));
        let out = if halves { SMALL / 2 } else { SMALL };
        let mut held = Vec::with_capacity(2);
        let result = (|| {
            let mut view = |side: u32, format: PixelFormat| {
                let bytes = u64::from(side) * u64::from(side) * format.bytes_per_pixel();
                let h = ctx.alloc(AllocDesc::new("kernel build", bytes).tag("frames"))?;
                held.push(h);
                Ok::<_, vramkit::Error>(ImageView::new(h, side, side, format))
            };
            let (src, dst) = (view(SMALL, stage.from)?, view(out, stage.to)?);
            let at = Geometry {
                origin: [0, 0],
                resize: ResizeRegion {
                    full_src: [SMALL, SMALL],
                    full_dst: [out, out],
                    src_origin: [0, 0],
                    dst_origin: [0, 0],
                },
            };
            self.launch(ctx, stage, (&src, &dst), &at)
        })();
        // Both go, whatever the first's release says.
        let released: Vec<Result<()>> = held.into_iter().map(|h| ctx.release(h)).collect();
        released.into_iter().fold(result, Result::and)
    }
}
