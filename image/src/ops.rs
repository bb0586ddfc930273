//! The operations of an image pipeline, the limits on their parameters and on frame sizes, their
//! output sizes, and the region of its input each needs to produce a region of its output (for
//! tiling with halos). Parsing them from text is in `parse.rs`.

use std::fmt;

use vramkit::{Error, Result};
use vramkit_kernels::image::{
    blur_weights, gaussian_radius, Blur, ColorOp, ResizeFilter, MAX_RADIUS,
};

/// The longest side of a frame, at every stage of a pipeline: 65,536 pixels. Resize kernels
/// compute source positions in f32, which at this size still resolve 1/256 of a pixel.
pub const MAX_SIDE: u32 = 1 << 16;

/// The most pixels of a frame, at every stage of a pipeline: 2³⁰ (e.g. 32768×32768), 4 GiB
/// as RGBA8 on the host.
pub const MAX_FRAME_PIXELS: u64 = 1 << 30;

/// The largest magnitude of `adjust`'s brightness and contrast: past it every pixel saturates.
pub const MAX_ADJUST: f32 = 1000.0;

/// The smallest gamma of `adjust`.
pub const MIN_GAMMA: f32 = 0.001;

/// The largest gamma of `adjust`.
pub const MAX_GAMMA: f32 = 1000.0;

/// A rectangle of pixels: `x0..x1` × `y0..y1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// First column.
    pub x0: u32,
    /// First row.
    pub y0: u32,
    /// One past the last column.
    pub x1: u32,
    /// One past the last row.
    pub y1: u32,
}

impl Rect {
    /// The whole `w × h` image.
    pub fn full(w: u32, h: u32) -> Self {
        Self {
            x0: 0,
            y0: 0,
            x1: w,
            y1: h,
        }
    }

    /// Width (0 for an inverted rectangle).
    pub fn width(&self) -> u32 {
        self.x1.saturating_sub(self.x0)
    }

    /// Height (0 for an inverted rectangle).
    pub fn height(&self) -> u32 {
        self.y1.saturating_sub(self.y0)
    }

    /// Pixels.
    pub fn area(&self) -> u64 {
        u64::from(self.width()) * u64::from(self.height())
    }
}

/// One operation of a chain. [`parse_chain`](super::parse_chain) makes them from text, and
/// `Display` writes that text back.
///
/// ```
/// use vramkit_image::Op;
/// let op: Op = "blur:sigma=1.5".parse()?;
/// assert_eq!(op, Op::Blur { sigma: 1.5 });
/// assert_eq!(op.to_string(), "blur:sigma=1.5");
/// # Ok::<(), vramkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// sRGB to linear.
    Linear,
    /// Linear to sRGB.
    Srgb,
    /// Gaussian blur.
    Blur {
        /// Standard deviation in pixels, in (0, 341].
        sigma: f32,
    },
    /// Box blur.
    BoxBlur {
        /// Radius in pixels, 1 to 1024.
        radius: u32,
    },
    /// Resize to an exact size.
    Resize {
        /// Output width, 1 to [`MAX_SIDE`].
        width: u32,
        /// Output height, 1 to [`MAX_SIDE`] (and at most [`MAX_FRAME_PIXELS`] in all).
        height: u32,
        /// Filter.
        filter: ResizeFilter,
    },
    /// Rec. 709 luma.
    Luma,
    /// Brightness, contrast, gamma.
    Adjust {
        /// Added after contrast, within ±[`MAX_ADJUST`].
        brightness: f32,
        /// Scale around mid-grey, within ±[`MAX_ADJUST`].
        contrast: f32,
        /// Gamma, [`MIN_GAMMA`] to [`MAX_GAMMA`].
        gamma: f32,
    },
}

impl fmt::Display for Op {
    /// The text [`parse_chain`](super::parse_chain) reads back to the same op (floats are
    /// written with the fewest digits that round-trip).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Linear => write!(f, "linear"),
            Op::Srgb => write!(f, "srgb"),
            Op::Luma => write!(f, "luma"),
            Op::Blur { sigma } => write!(f, "blur:sigma={sigma}"),
            Op::BoxBlur { radius } => write!(f, "box:radius={radius}"),
            Op::Resize {
                width,
                height,
                filter,
            } => match filter {
                ResizeFilter::Bilinear => write!(f, "resize:{width}x{height}"),
                ResizeFilter::Area => write!(f, "resize:{width}x{height}:area"),
            },
            Op::Adjust {
                brightness,
                contrast,
                gamma,
            } => write!(
                f,
                "adjust:brightness={brightness};contrast={contrast};gamma={gamma}"
            ),
        }
    }
}

/// What a parameter accepts, as error messages say it.
pub(super) const SIGMA: &str =
    "sigma is a finite number of pixels in (0, 341] (the blur radius, ceil(3 sigma), is at most 1024), e.g. blur:sigma=3";
pub(super) const RADIUS: &str =
    "radius is a whole number of pixels from 1 to 1024, e.g. box:radius=2";
pub(super) const BRIGHTNESS: &str =
    "brightness is a finite number from -1000 to 1000, e.g. adjust:brightness=0.1";
pub(super) const CONTRAST: &str =
    "contrast is a finite number from -1000 to 1000, e.g. adjust:contrast=1.2";
pub(super) const GAMMA: &str = "gamma is a finite number from 0.001 to 1000, e.g. adjust:gamma=2.2";
pub(super) const SIDE: &str =
    "a frame's side is 1 to 65536 pixels (vramkit_image::MAX_SIDE), e.g. resize:1920x1080";
pub(super) const PIXELS: &str = "a frame holds at most 1073741824 pixels \
     (vramkit_image::MAX_FRAME_PIXELS, e.g. 32768x32768), e.g. resize:7680x4320";

pub(super) fn sigma_ok(sigma: f32) -> bool {
    sigma.is_finite()
        && gaussian_radius(sigma) <= MAX_RADIUS
        && blur_weights(Blur::Gaussian { sigma }).is_ok()
}

pub(super) fn radius_ok(radius: u32) -> bool {
    blur_weights(Blur::Box { radius }).is_ok()
}

pub(super) fn adjust_ok(v: f32) -> bool {
    v.is_finite() && v.abs() <= MAX_ADJUST
}

pub(super) fn gamma_ok(g: f32) -> bool {
    g.is_finite() && (MIN_GAMMA..=MAX_GAMMA).contains(&g)
}

/// Checks a frame size against [`MAX_SIDE`] and [`MAX_FRAME_PIXELS`]: the parameter that is
/// wrong (`width`, `height` or `size`) and what is accepted.
pub(super) fn size_problem(size: [u32; 2]) -> Option<(usize, &'static str)> {
    for (i, side) in size.into_iter().enumerate() {
        if !(1..=MAX_SIDE).contains(&side) {
            return Some((i, SIDE));
        }
    }
    (u64::from(size[0]) * u64::from(size[1]) > MAX_FRAME_PIXELS).then_some((2, PIXELS))
}

impl Op {
    /// Checks the op's parameters against the ranges its fields document (ops made in code skip
    /// the parser's checks; [`Pipeline::new`](super::Pipeline::new) calls this).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the parameter and the op, and saying what is accepted.
    ///
    /// ```
    /// use vramkit_image::Op;
    /// assert!(Op::Blur { sigma: 2.0 }.validate().is_ok());
    /// assert!(Op::Blur { sigma: f32::NAN }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &'static str, value: String, reason: &'static str| {
            Err(Error::InvalidParameter {
                name,
                value: format!("{value} in `{self}`"),
                reason,
            })
        };
        match *self {
            Op::Linear | Op::Srgb | Op::Luma => Ok(()),
            Op::Blur { sigma } if !sigma_ok(sigma) => bad("sigma", sigma.to_string(), SIGMA),
            Op::BoxBlur { radius } if !radius_ok(radius) => {
                bad("radius", radius.to_string(), RADIUS)
            }
            Op::Resize { width, height, .. } => match size_problem([width, height]) {
                Some((0, why)) => bad("resize width", width.to_string(), why),
                Some((1, why)) => bad("resize height", height.to_string(), why),
                Some((_, why)) => bad("resize size", format!("{width}x{height}"), why),
                None => Ok(()),
            },
            Op::Adjust {
                brightness,
                contrast,
                gamma,
            } => {
                if !adjust_ok(brightness) {
                    bad("brightness", brightness.to_string(), BRIGHTNESS)
                } else if !adjust_ok(contrast) {
                    bad("contrast", contrast.to_string(), CONTRAST)
                } else if !gamma_ok(gamma) {
                    bad("gamma", gamma.to_string(), GAMMA)
                } else {
                    Ok(())
                }
            }
            Op::Blur { .. } | Op::BoxBlur { .. } => Ok(()),
        }
    }

    /// The blur radius (the halo this op needs on each side), 0 for the others.
    pub fn radius(&self) -> u32 {
        match *self {
            Op::Blur { sigma } => gaussian_radius(sigma),
            Op::BoxBlur { radius } => radius,
            _ => 0,
        }
    }

    /// The size of the output for an input of `size`.
    pub fn output_size(&self, size: [u32; 2]) -> [u32; 2] {
        match *self {
            Op::Resize { width, height, .. } => [width, height],
            _ => size,
        }
    }

    /// The part of an input of `input` size this op reads to produce `out` of its output.
    pub fn input_region(&self, out: Rect, input: [u32; 2]) -> Rect {
        let [w, h] = input;
        match *self {
            Op::Resize {
                width,
                height,
                filter,
            } => {
                let axis = |a: u32, b: u32, full_in: u32, full_out: u32| -> (u32, u32) {
                    let s = full_in as f32 / full_out.max(1) as f32;
                    let (lo, hi) = match filter {
                        ResizeFilter::Bilinear => (
                            ((a as f32 + 0.5) * s - 0.5).floor(),
                            ((b as f32 - 0.5) * s - 0.5).floor() + 1.0,
                        ),
                        ResizeFilter::Area => ((a as f32 * s).floor(), (b as f32 * s).ceil()),
                    };
                    // One pixel of margin against rounding, clamped to the image.
                    let lo = (lo - 1.0).max(0.0) as u32;
                    let hi = ((hi + 2.0) as u32).min(full_in);
                    let lo = lo.min(full_in.saturating_sub(1));
                    (lo, hi.max(lo.saturating_add(1)))
                };
                let (x0, x1) = axis(out.x0, out.x1, w, width);
                let (y0, y1) = axis(out.y0, out.y1, h, height);
                Rect { x0, y0, x1, y1 }
            }
            _ => {
                let r = self.radius();
                Rect {
                    x0: out.x0.saturating_sub(r),
                    y0: out.y0.saturating_sub(r),
                    x1: out.x1.saturating_add(r).min(w),
                    y1: out.y1.saturating_add(r).min(h),
                }
            }
        }
    }

    /// The colour operation, for per-pixel ops.
    pub(crate) fn color(&self) -> Option<ColorOp> {
        match *self {
            Op::Linear => Some(ColorOp::SrgbToLinear),
            Op::Srgb => Some(ColorOp::LinearToSrgb),
            Op::Luma => Some(ColorOp::Luma),
            Op::Adjust {
                brightness,
                contrast,
                gamma,
            } => Some(ColorOp::Adjust {
                brightness,
                contrast,
                gamma,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_limits_the_constants_hold() {
        assert!(SIDE.contains(&MAX_SIDE.to_string()));
        assert!(PIXELS.contains(&MAX_FRAME_PIXELS.to_string()));
        assert!(BRIGHTNESS.contains(&MAX_ADJUST.to_string()));
        assert!(CONTRAST.contains(&MAX_ADJUST.to_string()));
        assert!(GAMMA.contains(&MIN_GAMMA.to_string()));
        assert!(GAMMA.contains(&MAX_GAMMA.to_string()));
        assert!(RADIUS.contains(&MAX_RADIUS.to_string()));
    }

    #[test]
    fn the_halo_is_the_kernels_radius() {
        // Where f32 and f64 disagree on ceil(3 sigma), the kernel's f64 radius wins.
        // 7.3333335 and 59.666668 are such: 22 and 179 in f32, 23 and 180 in f64.
        let sigmas = [
            0.1f32,
            1.5,
            6.666_667,
            7.333_333_5,
            59.666_668,
            341.0,
            1024.0 / 3.0,
            1e-30,
        ];
        for sigma in sigmas {
            if sigma_ok(sigma) {
                let weights = blur_weights(Blur::Gaussian { sigma }).expect("valid sigma");
                assert_eq!(Op::Blur { sigma }.radius() as usize, weights.len() / 2);
            }
        }
    }
}
