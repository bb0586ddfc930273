//! Image kernels on frames stored in managed buffers: format conversion, separable blur,
//! resize and colour operations. Filters compute in f32 and read and write either format:
//! RGBA32F keeps full precision, RGBA8 reads and writes a quarter of the bytes (each kernel
//! rounds its output to 8 bits). Each kernel writes a region of its destination from a region of its source
//! (reads clamp to the source image), so a tile processed with its halo gives exactly the
//! pixels of the whole frame.
//!
//! **Alpha.** Filters (blur, resize) work on premultiplied alpha, as image libraries do, so
//! colour under alpha 0 never bleeds into visible pixels: they read `(rgb · a, a)` and write
//! `(rgb / a, a)`, colour 0 where alpha is 0 (`shaders/io/alpha.wgsl` and its CUDA twin, composed
//! in front of the filter bodies in `src/shaders.rs`). The blur's RGBA32F intermediate stays
//! premultiplied between its two passes. Frames in and out of every kernel hold straight alpha;
//! colour operations leave alpha as it is and work on straight colour.

use crate::backend::{Backend, KernelSource, SubmissionIndex};
use crate::error::{Error, Result};
use crate::{shaders, AllocDesc, Binding, BufferHandle, Context};

use super::blur_intermediate::Intermediate;

mod weights;

pub use weights::{blur_weights, gaussian_radius, Blur, MAX_RADIUS};

/// Pixel formats of frames in buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    /// 8-bit RGBA, one `u32` per pixel, R in the low byte.
    Rgba8,
    /// 32-bit float RGBA, 16 bytes per pixel.
    Rgba32F,
}

impl PixelFormat {
    /// Bytes per pixel.
    pub const fn bytes_per_pixel(self) -> u64 {
        match self {
            PixelFormat::Rgba8 => 4,
            PixelFormat::Rgba32F => 16,
        }
    }
}

/// An image in a buffer: `height` rows of `stride` pixels, of which the first `width` are the
/// image's.
///
/// ```
/// # let ctx = vramkit::Context::host(Default::default());
/// use vramkit::kernels::image::{ImageView, PixelFormat};
/// let h = ctx.alloc(vramkit::AllocDesc::new("frame", 3840 * 2160 * 4))?;
/// let frame = ImageView::new(h, 3840, 2160, PixelFormat::Rgba8);
/// assert_eq!(frame.bytes(), 33_177_600);
/// # Ok::<(), vramkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageView {
    /// The buffer.
    pub handle: BufferHandle,
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Pixels from one row's start to the next's (at least `width`).
    pub stride: u32,
    /// Pixel format.
    pub format: PixelFormat,
}

impl ImageView {
    /// An image of `width × height` pixels with rows packed (`stride == width`).
    pub fn new(handle: BufferHandle, width: u32, height: u32, format: PixelFormat) -> Self {
        Self {
            handle,
            width,
            height,
            stride: width,
            format,
        }
    }

    /// The same image with rows `stride` pixels apart.
    pub fn with_stride(mut self, stride: u32) -> Self {
        self.stride = stride;
        self
    }

    /// Bytes the image spans in its buffer (`u64::MAX` past it: no buffer holds that much).
    pub fn bytes(&self) -> u64 {
        u64::from(self.height.saturating_sub(1))
            .checked_mul(u64::from(self.stride))
            .and_then(|px| px.checked_add(u64::from(self.width)))
            .and_then(|px| px.checked_mul(self.format.bytes_per_pixel()))
            .unwrap_or(u64::MAX)
    }
}

/// A resize filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeFilter {
    /// Bilinear interpolation, pixel centres aligned.
    Bilinear,
    /// Coverage-weighted average over each output pixel's footprint (for downscaling).
    Area,
}

/// A per-pixel colour operation on RGBA32F (alpha is kept).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColorOp {
    /// sRGB-encoded to linear.
    SrgbToLinear,
    /// Linear to sRGB-encoded.
    LinearToSrgb,
    /// Rec. 709 luma into R, G and B.
    Luma,
    /// `clamp((v − 0.5) · contrast + 0.5 + brightness, 0, 1) ^ (1 / gamma)`.
    Adjust {
        /// Added after contrast.
        brightness: f32,
        /// Scale around mid-grey.
        contrast: f32,
        /// Gamma, > 0.
        gamma: f32,
    },
}

/// Checks a source and destination of one format (either), returning it.
fn check_pair<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
) -> Result<PixelFormat> {
    check(ctx, src, src.format, "source")?;
    check(ctx, dst, src.format, "destination")?;
    Ok(src.format)
}

fn check<B: Backend>(
    ctx: &Context<B>,
    img: &ImageView,
    format: PixelFormat,
    what: &str,
) -> Result<()> {
    if img.format != format {
        return Err(Error::ShapeMismatch {
            expected: format!("{what} in {format:?}"),
            actual: format!("{:?}", img.format),
        });
    }
    if img.width == 0 || img.height == 0 || img.stride < img.width {
        return Err(Error::ShapeMismatch {
            expected: format!("{what} of at least 1×1 pixels, stride ≥ width"),
            actual: format!("{}×{}, stride {}", img.width, img.height, img.stride),
        });
    }
    let have = ctx.size_of(img.handle)?;
    if have < img.bytes() {
        return Err(Error::ShapeMismatch {
            expected: format!("{what} buffer of at least {} bytes", img.bytes()),
            actual: format!("{have} bytes"),
        });
    }
    Ok(())
}

/// The region words every image kernel starts with.
fn region(src: &ImageView, dst: &ImageView, origin: [u32; 2]) -> Result<Vec<u32>> {
    let fits = |o: u32, d: u32, s: u32| o.checked_add(d).is_some_and(|end| end <= s);
    if !fits(origin[0], dst.width, src.width) || !fits(origin[1], dst.height, src.height) {
        return Err(Error::ShapeMismatch {
            expected: format!(
                "a {}×{} region at {origin:?} inside the {}×{} source",
                dst.width, dst.height, src.width, src.height
            ),
            actual: "a region past the source's edge".into(),
        });
    }
    Ok(vec![
        src.width, src.height, src.stride, dst.width, dst.height, dst.stride, origin[0], origin[1],
    ])
}

/// Workgroups of 16×16 covering `width × height` pixels.
fn groups(width: u32, height: u32) -> [u32; 3] {
    [width.div_ceil(16), height.div_ceil(16), 1]
}

fn launch<B: Backend>(
    ctx: &Context<B>,
    kernel: &KernelSource,
    bindings: &[BufferHandle],
    params: &[u32],
    dst: &ImageView,
) -> Result<SubmissionIndex> {
    let bindings: Vec<Binding> = bindings.iter().map(|&h| h.into()).collect();
    let groups = groups(dst.width, dst.height);
    // Every image function checked its views against their buffers and the region against
    // the source (`check`, `region`), so the kernel stays inside its bindings.
    ctx.dispatch_guarded(kernel, &[], &bindings, bytemuck::cast_slice(params), groups)
}

/// Converts a region between formats: RGBA8 `src` (from `origin`) into RGBA32F `dst`.
///
/// # Errors
/// [`Error::ShapeMismatch`] for wrong formats, empty images, small buffers or a region past
/// the source.
pub fn unpack_rgba8<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
) -> Result<SubmissionIndex> {
    convert(
        ctx,
        src,
        dst,
        origin,
        [PixelFormat::Rgba8, PixelFormat::Rgba32F],
    )
}

/// Packs RGBA32F `src` (from `origin`) into RGBA8 `dst`, clamping and rounding to nearest.
///
/// # Errors
/// As [`unpack_rgba8`].
pub fn pack_rgba8<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
) -> Result<SubmissionIndex> {
    convert(
        ctx,
        src,
        dst,
        origin,
        [PixelFormat::Rgba32F, PixelFormat::Rgba8],
    )
}

fn convert<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
    [from, to]: [PixelFormat; 2],
) -> Result<SubmissionIndex> {
    check(ctx, src, from, "source")?;
    check(ctx, dst, to, "destination")?;
    let kernel = match from {
        PixelFormat::Rgba8 => &shaders::IMAGE_UNPACK,
        PixelFormat::Rgba32F => &shaders::IMAGE_PACK,
    };
    let p = region(src, dst, origin)?;
    launch(ctx, kernel, &[src.handle, dst.handle], &p, dst)
}

/// Blurs `src` into `dst` (both RGBA8 or both RGBA32F): `dst(x, y)` is the blurred source at
/// `(x, y) + origin`, with clamp-to-edge at the source's borders. An RGBA32F intermediate of
/// `dst.width × src.height` pixels (a texture where the backend's kernels bind textures, else a
/// buffer: see `kernels/blur_intermediate.rs`) and the weights are allocated from the context
/// (and counted in its budget) for the call.
///
/// # Errors
/// As [`unpack_rgba8`], and [`Error::InvalidParameter`] for a bad sigma or radius.
pub fn blur<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
    blur: Blur,
) -> Result<SubmissionIndex> {
    let format = check_pair(ctx, src, dst)?;
    let weights = blur_weights(blur)?;
    let radius = (weights.len() / 2) as u32;
    let mut p = region(src, dst, origin)?;
    let w = ctx.alloc(AllocDesc::new("blur weights", weights.len() as u64 * 4).tag("kernels"))?;
    let (tmp, stride) = match Intermediate::alloc(ctx, dst.width, src.height) {
        Ok(t) => t,
        Err(e) => {
            ctx.release(w)?;
            return Err(e);
        }
    };
    let (horizontal, vertical) = match (format, tmp.is_texture()) {
        (PixelFormat::Rgba32F, false) => (&shaders::BLUR_HORIZONTAL, &shaders::BLUR_VERTICAL),
        (PixelFormat::Rgba8, false) => (
            &shaders::BLUR_HORIZONTAL_RGBA8,
            &shaders::BLUR_VERTICAL_RGBA8,
        ),
        (PixelFormat::Rgba32F, true) => (
            &shaders::BLUR_HORIZONTAL_TO_TEXTURE,
            &shaders::BLUR_VERTICAL_FROM_TEXTURE,
        ),
        (PixelFormat::Rgba8, true) => (
            &shaders::BLUR_HORIZONTAL_RGBA8_TO_TEXTURE,
            &shaders::BLUR_VERTICAL_RGBA8_FROM_TEXTURE,
        ),
    };
    let mut run = || -> Result<SubmissionIndex> {
        ctx.upload(w, bytemuck::cast_slice(&weights))?;
        let [mw, mh] = [dst.width, src.height];
        // Horizontal: every source row, the destination's columns.
        p[3..8].copy_from_slice(&[mw, mh, stride, origin[0], 0]);
        p.push(radius);
        tmp.launch(ctx, horizontal, false, src.handle, w, &p, groups(mw, mh))?;
        // Vertical: from the intermediate, the destination's rows.
        let v = [
            mw, mh, stride, dst.width, dst.height, dst.stride, 0, origin[1], radius,
        ];
        tmp.launch(
            ctx,
            vertical,
            true,
            dst.handle,
            w,
            &v,
            groups(dst.width, dst.height),
        )
    };
    let result = run();
    // Released now, freed when the passes that use them complete.
    tmp.release(ctx)?;
    ctx.release(w)?;
    result
}

/// Where a resize's buffers sit in the full images, for resizing a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizeRegion {
    /// Full source size.
    pub full_src: [u32; 2],
    /// Full destination size.
    pub full_dst: [u32; 2],
    /// Full-source coordinates of the source buffer's first pixel.
    pub src_origin: [u32; 2],
    /// Full-destination coordinates of the destination buffer's first pixel.
    pub dst_origin: [u32; 2],
}

/// Resizes the whole `src` into the whole `dst` (both RGBA8 or both RGBA32F).
///
/// # Errors
/// As [`unpack_rgba8`].
pub fn resize<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    filter: ResizeFilter,
) -> Result<SubmissionIndex> {
    let region = ResizeRegion {
        full_src: [src.width, src.height],
        full_dst: [dst.width, dst.height],
        src_origin: [0, 0],
        dst_origin: [0, 0],
    };
    resize_region(ctx, src, dst, filter, region)
}

/// Resizes part of an image: `dst` holds the output pixels from `region.dst_origin`, `src` the
/// source pixels from `region.src_origin`, which must cover every source pixel those output
/// pixels read.
///
/// # Errors
/// As [`unpack_rgba8`].
pub fn resize_region<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    filter: ResizeFilter,
    r: ResizeRegion,
) -> Result<SubmissionIndex> {
    let format = check_pair(ctx, src, dst)?;
    let inside = |o: [u32; 2], img: &ImageView, full: [u32; 2]| {
        (0..2).all(|i| {
            let size = if i == 0 { img.width } else { img.height };
            full[i] > 0 && o[i].checked_add(size).is_some_and(|end| end <= full[i])
        })
    };
    if !inside(r.src_origin, src, r.full_src) || !inside(r.dst_origin, dst, r.full_dst) {
        return Err(Error::ShapeMismatch {
            expected: "source and destination buffers inside their full images".into(),
            actual: format!("{r:?}"),
        });
    }
    let scale_x = r.full_src[0] as f32 / r.full_dst[0] as f32;
    let scale_y = r.full_src[1] as f32 / r.full_dst[1] as f32;
    let p = [
        src.width,
        src.height,
        src.stride,
        dst.width,
        dst.height,
        dst.stride,
        r.src_origin[0],
        r.src_origin[1],
        r.dst_origin[0],
        r.dst_origin[1],
        r.full_src[0],
        r.full_src[1],
        scale_x.to_bits(),
        scale_y.to_bits(),
    ];
    let kernel = match (filter, format) {
        (ResizeFilter::Bilinear, PixelFormat::Rgba32F) => &shaders::RESIZE_BILINEAR,
        (ResizeFilter::Bilinear, PixelFormat::Rgba8) => &shaders::RESIZE_BILINEAR_RGBA8,
        (ResizeFilter::Area, PixelFormat::Rgba32F) => &shaders::RESIZE_AREA,
        (ResizeFilter::Area, PixelFormat::Rgba8) => &shaders::RESIZE_AREA_RGBA8,
    };
    launch(ctx, kernel, &[src.handle, dst.handle], &p, dst)
}

/// Applies a colour operation to `src` (from `origin`) into `dst` (both RGBA8 or both
/// RGBA32F). `src` and `dst` may be the same image.
///
/// # Errors
/// As [`unpack_rgba8`], and [`Error::InvalidParameter`] for a gamma that is not positive and
/// finite.
pub fn color<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
    op: ColorOp,
) -> Result<SubmissionIndex> {
    let format = check_pair(ctx, src, dst)?;
    let pick = |f32k: &'static KernelSource, u8k: &'static KernelSource| match format {
        PixelFormat::Rgba32F => f32k,
        PixelFormat::Rgba8 => u8k,
    };
    let mut p = region(src, dst, origin)?;
    let (kernel, extra) = match op {
        ColorOp::SrgbToLinear => (
            pick(&shaders::SRGB_TO_LINEAR, &shaders::SRGB_TO_LINEAR_RGBA8),
            [0.0, 1.0, 1.0],
        ),
        ColorOp::LinearToSrgb => (
            pick(&shaders::LINEAR_TO_SRGB, &shaders::LINEAR_TO_SRGB_RGBA8),
            [0.0, 1.0, 1.0],
        ),
        ColorOp::Luma => (pick(&shaders::LUMA, &shaders::LUMA_RGBA8), [0.0, 1.0, 1.0]),
        ColorOp::Adjust {
            brightness,
            contrast,
            gamma,
        } => {
            if !(gamma > 0.0 && gamma.is_finite()) {
                return Err(Error::InvalidParameter {
                    name: "gamma",
                    value: gamma.to_string(),
                    reason: "gamma must be positive and finite",
                });
            }
            (
                pick(&shaders::ADJUST, &shaders::ADJUST_RGBA8),
                [brightness, contrast, gamma],
            )
        }
    };
    p.extend(extra.map(f32::to_bits));
    // With src == dst the buffer is bound twice; wgpu allows it, both bindings being read_write.
    launch(ctx, kernel, &[src.handle, dst.handle], &p, dst)
}
