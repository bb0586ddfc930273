//! Running a chain of operations on a frame within the context's budget: whole when its working
//! set fits, else in tiles whose inputs carry the halos the chain needs, so the output is the
//! same either way.

use super::ops::{size_problem, Op};
use vramkit::backend::Backend;
use vramkit::Context;
use vramkit::{Error, Result};
use vramkit_kernels::image::PixelFormat;

/// A chain of operations for frames of one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub(super) ops: Vec<Op>,
    /// Image size before each op, and after the last.
    pub(super) sizes: Vec<[u32; 2]>,
    /// Format of the frames between operations (see [`Pipeline::stage_formats`]).
    pub(super) working: PixelFormat,
    /// Format of the frames at the ends, uploaded and downloaded: RGBA8, or RGBA16 for
    /// [`Pipeline::run_rgba16`].
    pub(super) edge: PixelFormat,
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
    /// Host bytes the run used at its peak: the output frame (the caller's, with
    /// [`Pipeline::run_into`]), and when tiled one tile's
    /// input and output copies (the caller's input frame excluded; an untiled run uploads
    /// from it and downloads into the output frame directly).
    pub host_bytes: u64,
    /// Wall time of the frame, seconds.
    pub seconds: f64,
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
    /// use vramkit_image::{Op, Pipeline};
    /// use vramkit_kernels::image::ResizeFilter;
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
            edge: PixelFormat::Rgba8,
        })
    }

    /// Holds frames between operations in `format`. `Rgba32F` (the default) keeps full
    /// precision; `Rgba8` moves and holds a quarter of the bytes and rounds to 8 bits after each
    /// operation (each still computes in f32), except the stages from `linear` to the `srgb`
    /// that ends them, which stay in `Rgba32F` (8-bit linear light loses 8–13 levels in the
    /// shadows; see [`stage_formats`](Self::stage_formats)). `Rgba16` is held as `Rgba32F`:
    /// filters run on 8-bit and float frames.
    ///
    /// ```
    /// use vramkit_image::{parse_chain, Pipeline, PixelFormat::*};
    /// let p = Pipeline::new(parse_chain("blur:sigma=1,linear,blur:sigma=2,srgb")?, [64, 64])?
    ///     .with_working_format(Rgba8);
    /// assert_eq!(p.stage_formats(), [Rgba8, Rgba8, Rgba32F, Rgba32F, Rgba8]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn with_working_format(mut self, format: PixelFormat) -> Self {
        self.working = match format {
            PixelFormat::Rgba16 => PixelFormat::Rgba32F,
            f => f,
        };
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
    /// binding; [`Error::HostOutOfMemory`] naming the bytes when the host can not allocate the
    /// output frame.
    pub fn run<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u8],
    ) -> Result<(Vec<u8>, FrameReport)> {
        self.run_frame(ctx, input)
    }

    /// [`run`](Self::run) into `out`, an RGBA8 frame of [`output_size`](Self::output_size)
    /// the caller keeps (a video loop reuses one: no allocation, no page faults per frame).
    /// Returns how it ran.
    ///
    /// # Errors
    /// As [`run`](Self::run); [`Error::ShapeMismatch`] if `out` is not an RGBA8 frame of the
    /// output size. On an error `out` may hold part of the output.
    ///
    /// ```no_run
    /// use vramkit_image::{parse_chain, Pipeline};
    /// let ctx = vramkit::Context::new(Default::default())?;
    /// let p = Pipeline::new(parse_chain("resize:2x1")?, [4, 2])?;
    /// let mut out = vec![0u8; 2 * 4];
    /// for frame in [[200u8; 4 * 2 * 4], [100u8; 4 * 2 * 4]] {
    ///     p.run_into(&ctx, &frame, &mut out)?;
    ///     assert_eq!(out, [frame[0]; 2 * 4]);
    /// }
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn run_into<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u8],
        out: &mut [u8],
    ) -> Result<FrameReport> {
        self.run_frame_into(ctx, input, out)
    }

    /// [`run_rgba16`](Self::run_rgba16) into `out`, a 16-bit RGBA frame of the output size.
    ///
    /// # Errors
    /// As [`run_into`](Self::run_into), for 16-bit frames.
    pub fn run_rgba16_into<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u16],
        out: &mut [u16],
    ) -> Result<FrameReport> {
        self.run_frame_into(ctx, input, out)
    }

    /// Runs the chain on a 16-bit RGBA frame (four `u16` per pixel, R first, rows packed), as
    /// [`run`](Self::run) does: uploaded as [`PixelFormat::Rgba16`], filtered in RGBA32F
    /// whatever the working format (8-bit stages would lose the 16 bits), and rounded back to
    /// 16 bits once at the end. Returns the 16-bit output and how it ran.
    ///
    /// # Errors
    /// As [`run`](Self::run), for a 16-bit frame.
    ///
    /// ```no_run
    /// use vramkit_image::{parse_chain, Pipeline};
    /// let ctx = vramkit::Context::new(Default::default())?;
    /// let p = Pipeline::new(parse_chain("resize:2x1")?, [4, 2])?;
    /// let (out, _) = p.run_rgba16(&ctx, &[40_000u16; 4 * 2 * 4])?;
    /// assert_eq!(out, [40_000u16; 2 * 4]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn run_rgba16<B: Backend>(
        &self,
        ctx: &Context<B>,
        input: &[u16],
    ) -> Result<(Vec<u16>, FrameReport)> {
        self.run_frame(ctx, input)
    }
}
