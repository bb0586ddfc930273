//! The separable blur: two passes through an intermediate (`kernels/src/blur_intermediate.rs`),
//! each invocation writing [`BLUR_RUN`] pixels along its pass (`shaders/image_blur.wgsl`), and
//! [`blur_area2`], the blur followed by an exact 2× area downscale in the same two passes: its
//! vertical pass writes the downscaled frame, so the blurred frame never goes to memory.
//!
//! The horizontal pass into a buffer runs staged on the CUDA backend (`horizontal_staged`: the
//! rows' source segments and the outputs go through workgroup memory, so that a warp's global
//! reads and writes are of consecutive pixels) where the radius is at most
//! [`BLUR_STAGED_MAX_RADIUS`] and the device gives [`BLUR_STAGED_WORKGROUP_BYTES`] of
//! workgroup memory; else it runs unstaged. Both compute every pixel the same way, bit for
//! bit, so which one runs never shows. Measured on an H200 (BENCHMARKS.md): staged,
//! the CUDA blur is 6–7 % faster (the pass is no longer bound by L2 transactions but by its
//! instruction issue, 63 % SM throughput at 47 % occupancy); through NVIDIA's Vulkan driver the
//! staged pass made the wgpu blur 2.2× slower, and on CPU adapters 1.5–2× (lavapipe), so wgpu
//! keeps the unstaged pass.

use super::select::{pick, Table};
use super::{blur_weights, Blur, ImageParams, ImageView, PixelFormat};
use crate::blur_intermediate::Intermediate;
use crate::shaders;
use vramkit::backend::{Backend, KernelSource};
use vramkit::SubmissionIndex;
use vramkit::{AllocDesc, BufferHandle, Context};
use vramkit::{Error, Result};

use PixelFormat::{Rgba32F, Rgba8, Srgba8};

/// Pixels each invocation of a blur pass (`shaders::BLUR_*`) writes along its pass: a
/// workgroup of 16×16 covers `16 · BLUR_RUN` columns (horizontal) or rows (vertical).
pub const BLUR_RUN: u32 = 8;

/// The largest radius the staged horizontal pass
/// ([`shaders::BLUR_HORIZONTAL_STAGED`](crate::shaders::BLUR_HORIZONTAL_STAGED) and its format
/// twins) takes: its workgroup memory holds 4 rows of 384 source pixels (`STAGED_ROW` in
/// `shaders/image_blur.wgsl`: the last invocation's run of 129 taps + 7 more outputs, rounded
/// to groups of 4, starting 31 · 8 pixels in). A Gaussian of σ ≤ 21.333 has at most this radius.
pub const BLUR_STAGED_MAX_RADIUS: u32 = 64;

/// Bytes of workgroup memory the staged horizontal pass declares, at most: its 4 × 384 source
/// pixels and 36 vec4s of padded weights as `vec4<f32>` (25,152) and, for sRGB-encoded sources,
/// the table of the bytes' linear values (2,048). A device that gives less runs the unstaged
/// pass.
pub const BLUR_STAGED_WORKGROUP_BYTES: u32 = 27_200;

/// Columns and rows one workgroup of the staged horizontal pass covers.
const STAGED_SPAN: [u32; 2] = [256, 4];

/// Blurs `src` into `dst` (both RGBA8 or both RGBA32F, or sRGB-encoded RGBA8 on one side and
/// RGBA32F on the other): `dst(x, y)` is the blurred source at `(x, y) + origin`, with
/// clamp-to-edge at the source's borders. An intermediate (four f16 a pixel for RGBA8, values
/// under f16's smallest normal, 2⁻¹⁴, flushed to 0; else RGBA32F) of `dst.width × src.height`
/// pixels (a texture where the backend's kernels bind textures, else a buffer: see
/// `kernels/src/blur_intermediate.rs`) and the weights are allocated from the context (and counted
/// in its budget) for the call.
///
/// Source pixels must be finite (RGBA8, sRGB-encoded RGBA8 and RGBA16 always are): each
/// invocation computes [`BLUR_RUN`] neighbouring outputs from one run of source pixels with zero
/// weights outside each output's window, and `0 · ∞` is NaN, so an infinite or NaN RGBA32F pixel
/// reaches up to `BLUR_RUN + 2` pixels past its window, depending on where tiles fall.
///
/// # Errors
/// As [`unpack_rgba8`](super::unpack_rgba8), and [`Error::InvalidParameter`] for a bad sigma or
/// radius.
pub fn blur<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
    blur: Blur,
) -> Result<SubmissionIndex> {
    // Per format pair: the passes with a buffer intermediate (horizontal, horizontal staged,
    // vertical), then with a texture one.
    let passes: &Table<[&KernelSource; 5]> = &[
        (
            Rgba32F,
            Rgba32F,
            [
                &shaders::BLUR_HORIZONTAL,
                &shaders::BLUR_HORIZONTAL_STAGED,
                &shaders::BLUR_VERTICAL,
                &shaders::BLUR_HORIZONTAL_TO_TEXTURE,
                &shaders::BLUR_VERTICAL_FROM_TEXTURE,
            ],
        ),
        (
            Rgba8,
            Rgba8,
            [
                &shaders::BLUR_HORIZONTAL_RGBA8,
                &shaders::BLUR_HORIZONTAL_RGBA8_STAGED,
                &shaders::BLUR_VERTICAL_RGBA8,
                &shaders::BLUR_HORIZONTAL_RGBA8_TO_TEXTURE,
                &shaders::BLUR_VERTICAL_RGBA8_FROM_TEXTURE,
            ],
        ),
        (
            Srgba8,
            Rgba32F,
            [
                &shaders::BLUR_HORIZONTAL_SRGBA8,
                &shaders::BLUR_HORIZONTAL_SRGBA8_STAGED,
                &shaders::BLUR_VERTICAL,
                &shaders::BLUR_HORIZONTAL_SRGBA8_TO_TEXTURE,
                &shaders::BLUR_VERTICAL_FROM_TEXTURE,
            ],
        ),
        (
            Rgba32F,
            Srgba8,
            [
                &shaders::BLUR_HORIZONTAL,
                &shaders::BLUR_HORIZONTAL_STAGED,
                &shaders::BLUR_VERTICAL_TO_SRGBA8,
                &shaders::BLUR_HORIZONTAL_TO_TEXTURE,
                &shaders::BLUR_VERTICAL_TO_SRGBA8_FROM_TEXTURE,
            ],
        ),
    ];
    let [h_buffer, h_staged, v_buffer, h_texture, v_texture] = pick(ctx, src, dst, passes)?;
    let p = ImageParams::region(src, dst, origin)?;
    let half = src.format == Rgba8;
    let run = 16 * BLUR_RUN;
    let mid = Mid {
        width: dst.width,
        height: src.height,
        half,
        texture_ok: true,
    };
    two_passes(ctx, blur, src.handle, mid, |tmp| {
        let (horizontal, staged, vertical) = if tmp.is_texture() {
            (h_texture, None, v_texture)
        } else {
            (h_buffer, Some(h_staged), v_buffer)
        };
        Passes {
            horizontal,
            staged,
            h_params: p,
            vertical,
            v_params: ImageParams { ox: 0, ..p },
            v_groups: [dst.width.div_ceil(16), dst.height.div_ceil(run), 1],
            frame: dst.handle,
        }
    })
}

/// [`blur`] followed by an exact 2× area downscale, in the blur's two passes: `dst(X, Y)` is
/// the mean of the blurred source at `(2X, 2Y) + origin + {0, 1}²`, the pixels
/// [`blur`] into a `2·dst.width × 2·dst.height` frame and
/// [`resize`](super::resize) by half with [`ResizeFilter::Area`](super::ResizeFilter::Area)
/// would give, but the blurred frame is never written: the vertical pass blurs 2 columns × 4
/// rows an invocation and writes their 2×2 means. The intermediate is a buffer of four f16 a
/// pixel for 8-bit sources (RGBA8, sRGB-encoded RGBA8: within 2⁻¹¹ relative of the f32 one,
/// under half a level of the output) and RGBA32F for RGBA32F ones, `2·dst.width ×
/// src.height` pixels. Formats: RGBA8 → RGBA8, RGBA32F → RGBA32F, sRGB-encoded RGBA8 →
/// sRGB-encoded RGBA8 or RGBA32F, RGBA32F → sRGB-encoded RGBA8 ([`blur_area2_formats`]).
///
/// # Errors
/// As [`blur`]; [`Error::ShapeMismatch`] when the `2·dst` region at `origin` passes the
/// source.
pub fn blur_area2<B: Backend>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    origin: [u32; 2],
    blur: Blur,
) -> Result<SubmissionIndex> {
    let [horizontal, staged, vertical] = pick(ctx, src, dst, AREA2)?;
    let doubled = |side: u32| {
        side.checked_mul(2).ok_or_else(|| Error::ShapeMismatch {
            expected: "an output at most 2³¹ − 1 pixels a side (its source is twice as large)"
                .into(),
            actual: format!("{}×{}", dst.width, dst.height),
        })
    };
    let blurred = ImageView {
        width: doubled(dst.width)?,
        height: doubled(dst.height)?,
        ..*dst
    };
    let p = ImageParams::region(src, &blurred, origin)?;
    let half = src.format != Rgba32F;
    let mid = Mid {
        width: blurred.width,
        height: src.height,
        half,
        texture_ok: false,
    };
    two_passes(ctx, blur, src.handle, mid, |_| Passes {
        horizontal,
        staged: Some(staged),
        h_params: p,
        vertical,
        v_params: ImageParams {
            ox: 0,
            dst_w: dst.width,
            dst_h: dst.height,
            dst_stride: dst.stride,
            ..p
        },
        // Each invocation writes 2 rows of one output column.
        v_groups: [dst.width.div_ceil(16), dst.height.div_ceil(32), 1],
        frame: dst.handle,
    })
}

/// [`blur_area2`]'s passes per format pair: horizontal into the intermediate (unstaged and
/// staged), then the vertical pass with the downscale.
const AREA2: &Table<[&KernelSource; 3]> = &[
    (
        Srgba8,
        Srgba8,
        [
            &shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF,
            &shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF_STAGED,
            &shaders::BLUR_AREA2_HALF_TO_SRGBA8,
        ],
    ),
    (
        Srgba8,
        Rgba32F,
        [
            &shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF,
            &shaders::BLUR_HORIZONTAL_SRGBA8_TO_HALF_STAGED,
            &shaders::BLUR_AREA2_HALF_TO_RGBA32F,
        ],
    ),
    (
        Rgba8,
        Rgba8,
        [
            &shaders::BLUR_HORIZONTAL_RGBA8,
            &shaders::BLUR_HORIZONTAL_RGBA8_STAGED,
            &shaders::BLUR_AREA2_HALF_TO_RGBA8,
        ],
    ),
    (
        Rgba32F,
        Rgba32F,
        [
            &shaders::BLUR_HORIZONTAL,
            &shaders::BLUR_HORIZONTAL_STAGED,
            &shaders::BLUR_AREA2,
        ],
    ),
    (
        Rgba32F,
        Srgba8,
        [
            &shaders::BLUR_HORIZONTAL,
            &shaders::BLUR_HORIZONTAL_STAGED,
            &shaders::BLUR_AREA2_TO_SRGBA8,
        ],
    ),
];

/// Whether [`blur_area2`] has kernels from `src` to `dst`.
pub fn blur_area2_formats(src: PixelFormat, dst: PixelFormat) -> bool {
    AREA2.iter().any(|&(s, d, _)| s == src && d == dst)
}

/// One blur's two launches: the horizontal pass from the source frame into the intermediate
/// (`staged` where it has a staged form and the radius and device allow it), the vertical pass
/// from it into `frame`.
struct Passes<'k> {
    horizontal: &'k KernelSource,
    staged: Option<&'k KernelSource>,
    h_params: ImageParams,
    vertical: &'k KernelSource,
    v_params: ImageParams,
    v_groups: [u32; 3],
    frame: BufferHandle,
}

/// The horizontal pass of `passes` for `radius` into a `width × height` intermediate, and its
/// workgroups: the staged one on the CUDA backend where it has one and the radius, the
/// device's workgroup memory and its grid allow it; else the unstaged one (see the module
/// docs for the measurements behind the choice).
fn horizontal_pass<'k, B: Backend>(
    ctx: &Context<B>,
    passes: &Passes<'k>,
    radius: u32,
    width: u32,
    height: u32,
) -> (&'k KernelSource, [u32; 3]) {
    let limits = ctx.backend().limits();
    let groups = [
        width.div_ceil(STAGED_SPAN[0]),
        height.div_ceil(STAGED_SPAN[1]),
        1,
    ];
    let cuda = || ctx.backend().device_info().api == "CUDA";
    match passes.staged {
        Some(staged)
            if radius <= BLUR_STAGED_MAX_RADIUS
                && limits.max_workgroup_storage >= BLUR_STAGED_WORKGROUP_BYTES
                && groups[1] <= limits.max_workgroups[1]
                && cuda() =>
        {
            (staged, groups)
        }
        _ => {
            let run = 16 * BLUR_RUN;
            (
                passes.horizontal,
                [width.div_ceil(run), height.div_ceil(16), 1],
            )
        }
    }
}

/// A blur's intermediate: `width × height` pixels, four f16 a pixel when `half`, a texture
/// only where `texture_ok` and the adapter prefers one.
struct Mid {
    width: u32,
    height: u32,
    half: bool,
    texture_ok: bool,
}

/// Allocates the weights of `blur` and the intermediate `mid`, records the passes `plan` gives
/// for it from the frame `src`, and releases both (freed when the passes complete).
fn two_passes<'k, B: Backend>(
    ctx: &Context<B>,
    blur: Blur,
    src: BufferHandle,
    mid: Mid,
    plan: impl FnOnce(&Intermediate) -> Passes<'k>,
) -> Result<SubmissionIndex> {
    let Mid { width, height, .. } = mid;
    let weights = blur_weights(blur)?;
    let radius = (weights.len() / 2) as u32;
    let w = ctx.alloc(AllocDesc::new("blur weights", weights.len() as u64 * 4).tag("kernels"))?;
    let (tmp, stride) = match Intermediate::alloc(ctx, width, height, mid.half, mid.texture_ok) {
        Ok(t) => t,
        Err(e) => {
            ctx.release(w)?;
            return Err(e);
        }
    };
    let passes = plan(&tmp);
    let (horizontal, h_groups) = horizontal_pass(ctx, &passes, radius, width, height);
    let run = || -> Result<SubmissionIndex> {
        if let Intermediate::Buffer(_) = tmp {
            // Both passes built at once where neither is yet (a cold driver takes tenths of a
            // second a kernel), as their launches build them.
            ctx.build_kernels(&[(horizontal, &[]), (passes.vertical, &[])])?;
        }
        ctx.upload(w, bytemuck::cast_slice(&weights))?;
        let h = ImageParams {
            dst_w: width,
            dst_h: height,
            dst_stride: stride,
            oy: 0,
            radius,
            ..passes.h_params
        };
        tmp.launch(ctx, horizontal, false, src, w, &h, h_groups)?;
        // Vertical: from the intermediate into the frame.
        let v = ImageParams {
            src_w: width,
            src_h: height,
            src_stride: stride,
            radius,
            ..passes.v_params
        };
        tmp.launch(
            ctx,
            passes.vertical,
            true,
            passes.frame,
            w,
            &v,
            passes.v_groups,
        )
    };
    let result = run();
    // Released now, freed when the passes that use them complete.
    tmp.release(ctx)?;
    ctx.release(w)?;
    result
}
