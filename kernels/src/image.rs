//! Image kernels on frames stored in managed buffers: format conversion, separable blur,
//! resize and colour operations. Filters compute in f32 and read and write either format:
//! RGBA32F keeps full precision, RGBA8 reads and writes a quarter of the bytes (each kernel
//! rounds its output to 8 bits). Each kernel writes a region of its destination from a region
//! of its source (reads clamp to the source image), so a tile processed with its halo gives
//! exactly the pixels of the whole frame.
//!
//! **Formats.** A kernel is its body (`shaders/image_*.wgsl`) behind io preludes that read and
//! write one pixel format (`shaders/io/src_*.wgsl`, `dst_*.wgsl`; `src/shaders.rs` composes
//! them), and each function lists the format pairs it has kernels for (`select.rs`): filters
//! and colour ops run RGBA8 → RGBA8 and RGBA32F → RGBA32F; `linear` also runs RGBA8 → RGBA32F
//! and `srgb` RGBA32F → RGBA8, for the RGBA32F linear stages of an RGBA8 chain
//! (the `vramkit-image` crate). **sRGB-encoded frames** ([`PixelFormat::Srgba8`]: RGBA8 bytes read as
//! linear light and written from it, by the io preludes `src_srgba8` / `dst_srgba8`) fuse a
//! chain's leading `linear` and trailing `srgb` into the filter next to them: blur and resize
//! run Srgba8 → RGBA32F and RGBA32F → Srgba8, and [`convert`] between Srgba8 and RGBA32F is
//! the transfer function itself. **16-bit frames** ([`PixelFormat::Rgba16`], two `u32` words per pixel
//! since WGSL has no 16-bit integers) only [`convert`] to and from RGBA32F, where they are
//! filtered.
//!
//! **Alpha.** Filters (blur, resize) work on premultiplied alpha, as image libraries do, so
//! colour under alpha 0 never bleeds into visible pixels: they read `(rgb · a, a)` and write
//! `(rgb / a, a)`, colour 0 where alpha is 0 (`shaders/io/alpha.wgsl` and its CUDA twin, composed
//! in front of the filter bodies in `src/shaders.rs`). The blur's intermediate (RGBA32F, or
//! four f16 for RGBA8 → RGBA8) stays premultiplied between its two passes. Frames in and out of every kernel hold straight alpha;
//! colour operations leave alpha as it is and work on straight colour.

use crate::shaders;
use vramkit::backend::{Backend, KernelSource};
use vramkit::SubmissionIndex;
use vramkit::{Binding, BufferHandle, Context};
use vramkit::{Error, Result};

mod blur;
mod params;
mod select;
#[cfg(test)]
mod unorm;
mod view;
mod weights;

pub use super::blur_intermediate::blur_intermediate_bytes;
pub use blur::{
    blur, blur_area2, blur_area2_formats, BLUR_RUN, BLUR_STAGED_MAX_RADIUS,
    BLUR_STAGED_WORKGROUP_BYTES,
};
pub use params::ImageParams;
use select::{pick, Table};
pub use view::{ImageView, PixelFormat};
pub use weights::{blur_weights, gaussian_radius, Blur, MAX_RADIUS};

use PixelFormat::{Rgba16, Rgba32F, Rgba8, Srgba8};

/// Format conversions: into RGBA32F and back.
const CONVERT: &Table<&KernelSource> = &[
    (Rgba8, Rgba32F, &shaders::IMAGE_UNPACK),
    (Rgba32F, Rgba8, &shaders::IMAGE_PACK),
    (Rgba16, Rgba32F, &shaders::IMAGE_UNPACK_RGBA16),
    (Rgba32F, Rgba16, &shaders::IMAGE_PACK_RGBA16),
    (Srgba8, Rgba32F, &shaders::SRGB_TO_LINEAR_RGBA8_TO_RGBA32F),
    (Rgba32F, Srgba8, &shaders::LINEAR_TO_SRGB_RGBA32F_TO_RGBA8),
];

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

/// Workgroups of 16×16 covering `width × height` pixels.
fn groups(width: u32, height: u32) -> [u32; 3] {
    [width.div_ceil(16), height.div_ceil(16), 1]
}

fn launch<B: Backend>(
    ctx: &Context<B>,
    kernel: &KernelSource,
    bindings: &[BufferHandle],
    params: &ImageParams,
    dst: &ImageView,
) -> Result<SubmissionIndex> {
    launch_wide(ctx, kernel, bindings, params, dst, 1)
}

/// [`launch`] for a kernel whose invocations write `columns` pixels of a row each.
fn launch_wide<B: Backend>(
    ctx: &Context<B>,
    kernel: &KernelSource,
    bindings: &[BufferHandle],
    params: &ImageParams,
    dst: &ImageView,
    columns: u32,
) -> Result<SubmissionIndex> {
    let bindings: Vec<Binding> = bindings.iter().map(|&h| h.into()).collect();
    let groups = groups(dst.width.div_ceil(columns), dst.height);
    // SAFETY: every image function checked its views against their buffers and the region
    // against the source (`check`, `region`), so the kernel stays inside its bindings and its
    // workgroup arrays, its integer divisions are by constants, and its loops are bounded by
    // the region and the filter's taps.
    unsafe { ctx.dispatch_unchecked(kernel, &[], &bindings, bytemuck::bytes_of(params), groups) }
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
    convert_with(ctx, src, dst, origin, &CONVERT[..1])
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
    convert_with(ctx, src, dst, origin, &CONVERT[1..2])
}

/// Converts a region of `src` (from `origin`) into `dst` between pixel formats: RGBA8,
/// RGBA16 or sRGB-encoded RGBA8 (decoded to linear light) into RGBA32F, or RGBA32F into RGBA8,
/// RGBA16 or sRGB-encoded RGBA8 (encoding linear light; each clamping to [0, 1] and rounding
/// to nearest).
///
/// # Errors
/// As [`unpack_rgba8`], naming the formats a view may have.
pub fn convert<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
) -> Result<SubmissionIndex> {
    convert_with(ctx, src, dst, origin, CONVERT)
}

fn convert_with<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
    table: &Table<&'static KernelSource>,
) -> Result<SubmissionIndex> {
    let kernel = pick(ctx, src, dst, table)?;
    let p = ImageParams::region(src, dst, origin)?;
    launch(ctx, kernel, &[src.handle, dst.handle], &p, dst)
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

/// Resizes the whole `src` into the whole `dst` (both RGBA8 or both RGBA32F, or sRGB-encoded
/// RGBA8 on one side and RGBA32F on the other).
///
/// # Errors
/// As [`resize_region`].
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
/// As [`unpack_rgba8`]; [`Error::InvalidParameter`] for a full image of 2²⁴ pixels a side or
/// more.
pub fn resize_region<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    filter: ResizeFilter,
    r: ResizeRegion,
) -> Result<SubmissionIndex> {
    let kernels: &Table<[&KernelSource; 2]> = &[
        (
            Rgba32F,
            Rgba32F,
            [&shaders::RESIZE_BILINEAR, &shaders::RESIZE_AREA],
        ),
        (
            Rgba8,
            Rgba8,
            [&shaders::RESIZE_BILINEAR_RGBA8, &shaders::RESIZE_AREA_RGBA8],
        ),
        (
            Srgba8,
            Rgba32F,
            [
                &shaders::RESIZE_BILINEAR_FROM_SRGBA8,
                &shaders::RESIZE_AREA_FROM_SRGBA8,
            ],
        ),
        (
            Rgba32F,
            Srgba8,
            [
                &shaders::RESIZE_BILINEAR_TO_SRGBA8,
                &shaders::RESIZE_AREA_TO_SRGBA8,
            ],
        ),
    ];
    let [bilinear, area] = pick(ctx, src, dst, kernels)?;
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
    // The kernels step pixel coordinates in f32, exact below 2²⁴.
    if r.full_src
        .iter()
        .chain(&r.full_dst)
        .any(|&side| side >= 1 << 24)
    {
        return Err(Error::InvalidParameter {
            name: "resize size",
            value: format!("{:?} → {:?}", r.full_src, r.full_dst),
            reason: "resize takes images under 2²⁴ (16,777,216) pixels a side: resize the \
                     image in parts",
        });
    }
    let scale_x = r.full_src[0] as f32 / r.full_dst[0] as f32;
    let scale_y = r.full_src[1] as f32 / r.full_dst[1] as f32;
    let p = ImageParams {
        sx0: r.src_origin[0],
        sy0: r.src_origin[1],
        dx0: r.dst_origin[0],
        dy0: r.dst_origin[1],
        full_src_w: r.full_src[0],
        full_src_h: r.full_src[1],
        scale_x,
        scale_y,
        ..ImageParams::views(src, dst)
    };
    let kernel = match filter {
        ResizeFilter::Bilinear => bilinear,
        ResizeFilter::Area => area,
    };
    launch(ctx, kernel, &[src.handle, dst.handle], &p, dst)
}

/// Applies a colour operation to `src` (from `origin`) into `dst` (both RGBA8 or both
/// RGBA32F; sRGB to linear also RGBA8 into RGBA32F, and linear to sRGB RGBA32F into RGBA8).
/// `src` and `dst` may be the same image.
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
    // Each op's kernels on RGBA32F and on RGBA8. The stages of an RGBA8 chain from `linear` to
    // `srgb` are held in RGBA32F (the `vramkit-image` crate does): those two ops also run between formats.
    let (f32k, u8k, between, extra): (_, _, Option<(_, _, &KernelSource)>, _) = match op {
        ColorOp::SrgbToLinear => (
            &shaders::SRGB_TO_LINEAR,
            &shaders::SRGB_TO_LINEAR_RGBA8,
            Some((Rgba8, Rgba32F, &shaders::SRGB_TO_LINEAR_RGBA8_TO_RGBA32F)),
            [0.0, 1.0, 1.0],
        ),
        ColorOp::LinearToSrgb => (
            &shaders::LINEAR_TO_SRGB,
            &shaders::LINEAR_TO_SRGB_RGBA8,
            Some((Rgba32F, Rgba8, &shaders::LINEAR_TO_SRGB_RGBA32F_TO_RGBA8)),
            [0.0, 1.0, 1.0],
        ),
        ColorOp::Luma => (&shaders::LUMA, &shaders::LUMA_RGBA8, None, [0.0, 1.0, 1.0]),
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
                &shaders::ADJUST,
                &shaders::ADJUST_RGBA8,
                None,
                [brightness, contrast, gamma],
            )
        }
    };
    let mut table = vec![(Rgba32F, Rgba32F, f32k), (Rgba8, Rgba8, u8k)];
    table.extend(between);
    let kernel = pick(ctx, src, dst, &table)?;
    let [brightness, contrast, gamma] = extra;
    let p = ImageParams {
        brightness,
        contrast,
        gamma,
        ..ImageParams::region(src, dst, origin)?
    };
    // The per-channel ops on RGBA8 → RGBA8 run by table, 4 pixels an invocation
    // (shaders/image_color_rgba8.wgsl).
    let by_table = src.format == Rgba8 && dst.format == Rgba8 && !matches!(op, ColorOp::Luma);
    let columns = if by_table { 4 } else { 1 };
    // With src == dst the buffer is bound twice; wgpu allows it, both bindings being read_write.
    launch_wide(ctx, kernel, &[src.handle, dst.handle], &p, dst, columns)
}
