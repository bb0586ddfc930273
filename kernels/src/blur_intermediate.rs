//! Where a blur keeps its intermediate (the horizontal pass's output, the vertical pass's
//! input): in an RGBA32F texture on CPU adapters whose kernels bind textures (lavapipe), when
//! the intermediate fits one; else in a buffer (four f16 per pixel for an RGBA8 blur, half the
//! bytes of RGBA32F, which RGBA32F blurs keep). Either way it is allocated from the context for the call, counted
//! in its budget and statistics (kind [`MemoryKind::Texture`](vramkit::MemoryKind::Texture) or
//! device memory, tag `frames`), and released as soon as the passes are recorded.
//!
//! The rule is measured (`cargo bench -p vramkit-kernels --bench blur_intermediate`, BENCHMARKS.md "Textures or
//! buffers"), the same kernels with either intermediate on a resident 4K RGBA32F frame: on
//! lavapipe the vertical pass's column-wise reads cost less through a texture's 2-D layout
//! than through a buffer's rows (0.84–0.89× the time, 1280×720), on the H200 through NVIDIA's
//! Vulkan driver they cost more (1.30× at σ = 2, 1.35× at σ = 8: coalesced buffer rows already
//! serve a warp's columns), and every texture the blur allocates is a new driver image (no
//! pool), which there cost ~4.5 ms a call. So discrete and integrated GPUs keep buffers; CUDA
//! and the host have no texture kernels. The frames between operations stay buffers.
//! The texture passes are the buffer passes' WGSL with the io preludes `dst_texture` and
//! `src_texture`, and are launched with bounds checks (`ctx.textures().dispatch`).

use super::image::ImageParams;
use vramkit::backend::{Backend, KernelSource};
use vramkit::texture::KernelArg;
use vramkit::texture::{TextureDesc, TextureFormat, TextureUsage, ROW_ALIGNMENT};
use vramkit::Result;
use vramkit::SubmissionIndex;
use vramkit::{AllocDesc, BufferHandle, Context, TextureHandle};

/// A blur's intermediate.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Intermediate {
    /// Rows of `stride` pixels in a buffer: RGBA32F, or four f16 for an RGBA8 blur.
    Buffer(BufferHandle),
    /// An RGBA32F texture, sampled and stored; the kernels address it with a power-of-two
    /// stride (see `shaders/io/src_texture.wgsl`).
    Texture(TextureHandle),
}

/// Bytes of a `width × height` intermediate in a buffer, four f16 or four f32 per pixel.
fn buffer_bytes(width: u32, height: u32, half: bool) -> u64 {
    u64::from(width) * u64::from(height) * if half { 8 } else { 16 }
}

/// Bytes a [`blur`](super::image::blur) charges the budget for its intermediate when it
/// writes `width × height` pixels: the larger of the RGBA32F buffer and the RGBA32F texture
/// (rows padded to 256 bytes), whichever the device will take. A tiling planner counts this
/// for each blur of a tile.
///
/// ```
/// use vramkit_kernels::image::blur_intermediate_bytes;
/// assert_eq!(blur_intermediate_bytes(16, 2), 2 * 256);
/// assert_eq!(blur_intermediate_bytes(3840, 2160), 3840 * 2160 * 16);
/// ```
pub fn blur_intermediate_bytes(width: u32, height: u32) -> u64 {
    let row = (u64::from(width) * 16).next_multiple_of(ROW_ALIGNMENT);
    buffer_bytes(width, height, false).max(row.saturating_mul(u64::from(height)))
}

impl Intermediate {
    /// The intermediate for a blur writing `width × height` pixels, and the row stride its
    /// passes use: a texture on a CPU adapter whose kernels bind textures, when `texture_ok`
    /// (the caller has texture passes), both sides fit one and the power-of-two stride keeps
    /// every pixel index within `u32`; else a buffer, of four f16 per pixel when `half` (an
    /// 8-bit blur: values in [0, 1], where f16's 11 bits are under a quarter of an 8-bit level)
    /// and of RGBA32F otherwise.
    ///
    /// # Errors
    /// As [`Context::alloc`] or [`Textures::alloc`](vramkit::texture::Textures::alloc) (over the budget, out of memory).
    pub(crate) fn alloc<B: Backend>(
        ctx: &Context<B>,
        width: u32,
        height: u32,
        half: bool,
        texture_ok: bool,
    ) -> Result<(Self, u32)> {
        let limits = ctx.backend().limits();
        let stride = width.checked_next_power_of_two().unwrap_or(0);
        let fits = width <= limits.max_texture_side
            && height <= limits.max_texture_side
            && stride > 0
            && u64::from(stride) * u64::from(height) <= u64::from(u32::MAX);
        let cpu = || ctx.backend().device_info().device_type == "cpu";
        if texture_ok && limits.texture_kernels && fits && cpu() {
            let desc = TextureDesc::new(
                "blur intermediate",
                width,
                height,
                TextureFormat::Rgba32Float,
            )
            .usage(TextureUsage::SAMPLED | TextureUsage::STORAGE)
            .tag("frames");
            return Ok((Self::Texture(ctx.textures().alloc(desc)?), stride));
        }
        let desc = AllocDesc::new("blur intermediate", buffer_bytes(width, height, half))
            .uninit()
            .tag("frames");
        Ok((Self::Buffer(ctx.alloc(desc)?), width))
    }

    /// Releases it (freed once the passes recorded on it have run).
    ///
    /// # Errors
    /// As [`Context::release`].
    pub(crate) fn release<B: Backend>(self, ctx: &Context<B>) -> Result<()> {
        match self {
            Self::Buffer(h) => ctx.release(h),
            Self::Texture(t) => ctx.textures().release(t),
        }
    }

    /// Whether it is a texture (its passes are the `*_TEXTURE` kernels).
    pub(crate) fn is_texture(&self) -> bool {
        matches!(self, Self::Texture(_))
    }

    /// Records one pass of `kernel`: `frame` is the source (horizontal) or the destination
    /// (vertical), `weights` the weights buffer, `params` the pass's params.
    ///
    /// # Errors
    /// As [`Context::dispatch_unchecked`] or [`Textures::dispatch`](vramkit::texture::Textures::dispatch).
    #[allow(clippy::too_many_arguments, reason = "one pass's launch, all of it")]
    pub(crate) fn launch<B: Backend>(
        &self,
        ctx: &Context<B>,
        kernel: &KernelSource,
        vertical: bool,
        frame: BufferHandle,
        weights: BufferHandle,
        params: &ImageParams,
        groups: [u32; 3],
    ) -> Result<SubmissionIndex> {
        let params = bytemuck::bytes_of(params);
        match *self {
            Self::Buffer(mid) => {
                let (a, b) = if vertical { (mid, frame) } else { (frame, mid) };
                let bindings = [a.into(), b.into(), weights.into()];
                // SAFETY: the blur checked its views against their buffers and the region
                // against the source, and sized the intermediate to the region and the weights
                // to the taps the params name: the passes stay inside their bindings and their
                // workgroup rows, divide only by constants, and loop over the taps.
                unsafe { ctx.dispatch_unchecked(kernel, &[], &bindings, params, groups) }
            }
            Self::Texture(mid) => {
                let (a, b): (KernelArg, KernelArg) = if vertical {
                    (mid.into(), frame.into())
                } else {
                    (frame.into(), mid.into())
                };
                ctx.textures()
                    .dispatch(kernel, &[], &[a, b, weights.into()], params, groups)
            }
        }
    }
}
