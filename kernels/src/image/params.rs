//! The params of every image kernel, declared once per language: [`ImageParams`] here,
//! `shaders/params/image.wgsl` for WGSL and `shaders/cuda/params/image.cuh` for CUDA
//! (`src/shaders.rs` composes the prelude in front of each kernel). A test checks the Rust
//! layout against naga's layout of the WGSL struct.

use bytemuck::{Pod, Zeroable};

use super::ImageView;
use vramkit::{Error, Result};

/// The params of vramkit's image kernels ([`crate::shaders`]' `IMAGE_*`, `BLUR_*`, `RESIZE_*`
/// and the colour ops), as they sit in the kernel's uniform: every kernel reads the fields it
/// needs. The typed functions of [`crate::image`] fill and validate it; build one
/// yourself only to launch those kernels with [`Context::dispatch`](vramkit::Context::dispatch)
/// (bounds-checked).
///
/// ```
/// use vramkit_kernels::image::ImageParams;
/// let p = ImageParams { src_w: 64, src_h: 32, src_stride: 64, ..Default::default() };
/// assert_eq!(bytemuck::bytes_of(&p).len(), 80);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ImageParams {
    /// Source width, pixels.
    pub src_w: u32,
    /// Source height, rows.
    pub src_h: u32,
    /// Source row stride, pixels.
    pub src_stride: u32,
    /// Destination region width.
    pub dst_w: u32,
    /// Destination region height.
    pub dst_h: u32,
    /// Destination row stride, pixels.
    pub dst_stride: u32,
    /// Source x the destination's first pixel reads (copy, colour, blur).
    pub ox: u32,
    /// Source y the destination's first pixel reads.
    pub oy: u32,
    /// Blur: taps either side of the centre.
    pub radius: u32,
    /// Resize: full-source x of the source buffer's first pixel.
    pub sx0: u32,
    /// Resize: full-source y of the source buffer's first pixel.
    pub sy0: u32,
    /// Resize: full-destination x of the destination buffer's first pixel.
    pub dx0: u32,
    /// Resize: full-destination y of the destination buffer's first pixel.
    pub dy0: u32,
    /// Resize: full source width.
    pub full_src_w: u32,
    /// Resize: full source height.
    pub full_src_h: u32,
    /// Resize: source pixels per destination pixel, across.
    pub scale_x: f32,
    /// Resize: source pixels per destination pixel, down.
    pub scale_y: f32,
    /// Adjust: added after contrast.
    pub brightness: f32,
    /// Adjust: scale around mid-grey.
    pub contrast: f32,
    /// Adjust: gamma.
    pub gamma: f32,
}

impl ImageParams {
    /// The params of a kernel writing the whole `dst` from `src` pixels starting at `origin`,
    /// checked: the region must lie inside the source.
    pub(crate) fn region(src: &ImageView, dst: &ImageView, origin: [u32; 2]) -> Result<Self> {
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
        Ok(Self {
            ox: origin[0],
            oy: origin[1],
            ..Self::views(src, dst)
        })
    }

    /// The sizes and strides of `src` and `dst`, every other field zero.
    pub(crate) fn views(src: &ImageView, dst: &ImageView) -> Self {
        Self {
            src_w: src.width,
            src_h: src.height,
            src_stride: src.stride,
            dst_w: dst.width,
            dst_h: dst.height,
            dst_stride: dst.stride,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::ImageParams;
    use crate::params_layout::{check_cuda_fields, check_layout};

    #[test]
    fn rust_layout_matches_wgsl() {
        let fields = [
            ("src_w", offset_of!(ImageParams, src_w)),
            ("src_h", offset_of!(ImageParams, src_h)),
            ("src_stride", offset_of!(ImageParams, src_stride)),
            ("dst_w", offset_of!(ImageParams, dst_w)),
            ("dst_h", offset_of!(ImageParams, dst_h)),
            ("dst_stride", offset_of!(ImageParams, dst_stride)),
            ("ox", offset_of!(ImageParams, ox)),
            ("oy", offset_of!(ImageParams, oy)),
            ("radius", offset_of!(ImageParams, radius)),
            ("sx0", offset_of!(ImageParams, sx0)),
            ("sy0", offset_of!(ImageParams, sy0)),
            ("dx0", offset_of!(ImageParams, dx0)),
            ("dy0", offset_of!(ImageParams, dy0)),
            ("full_src_w", offset_of!(ImageParams, full_src_w)),
            ("full_src_h", offset_of!(ImageParams, full_src_h)),
            ("scale_x", offset_of!(ImageParams, scale_x)),
            ("scale_y", offset_of!(ImageParams, scale_y)),
            ("brightness", offset_of!(ImageParams, brightness)),
            ("contrast", offset_of!(ImageParams, contrast)),
            ("gamma", offset_of!(ImageParams, gamma)),
        ];
        check_layout(
            include_str!("../../shaders/params/image.wgsl"),
            "ImageParams",
            size_of::<ImageParams>(),
            &fields,
        );
        check_cuda_fields(
            include_str!("../../shaders/cuda/params/image.cuh"),
            "ImageParams",
            &fields,
        );
    }
}
