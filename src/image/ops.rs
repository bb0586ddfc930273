//! The operations of an image pipeline, their parsing, output sizes, and the region of its input
//! each needs to produce a region of its output (for tiling with halos).

use std::str::FromStr;

use crate::error::{Error, Result};
use crate::kernels::image::{blur_weights, Blur, ColorOp, ResizeFilter};

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

    /// Width.
    pub fn width(&self) -> u32 {
        self.x1 - self.x0
    }

    /// Height.
    pub fn height(&self) -> u32 {
        self.y1 - self.y0
    }

    /// Pixels.
    pub fn area(&self) -> u64 {
        u64::from(self.width()) * u64::from(self.height())
    }
}

/// One operation of a chain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// sRGB to linear.
    Linear,
    /// Linear to sRGB.
    Srgb,
    /// Gaussian blur.
    Blur {
        /// Standard deviation in pixels.
        sigma: f32,
    },
    /// Box blur.
    BoxBlur {
        /// Radius in pixels.
        radius: u32,
    },
    /// Resize to an exact size.
    Resize {
        /// Output width.
        width: u32,
        /// Output height.
        height: u32,
        /// Filter.
        filter: ResizeFilter,
    },
    /// Rec. 709 luma.
    Luma,
    /// Brightness, contrast, gamma.
    Adjust {
        /// Added after contrast.
        brightness: f32,
        /// Scale around mid-grey.
        contrast: f32,
        /// Gamma.
        gamma: f32,
    },
}

fn bad(op: &str, reason: &'static str) -> Error {
    Error::InvalidParameter {
        name: "operation",
        value: op.to_string(),
        reason,
    }
}

fn number<T: FromStr>(op: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| bad(op, "a number is expected after `=` (e.g. blur:sigma=3)"))
}

impl FromStr for Op {
    type Err = Error;

    /// `linear`, `srgb`, `luma`, `blur:sigma=S`, `box:radius=R`, `resize:WxH[:area]`,
    /// `adjust:brightness=B,contrast=C,gamma=G` (inside a chain, separate adjust's settings
    /// with `;`).
    fn from_str(s: &str) -> Result<Self> {
        let (name, args) = s.split_once(':').unwrap_or((s, ""));
        let kv = |key: &str| -> Option<&str> {
            args.split([';', ':'])
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim())
        };
        let op = match name.trim() {
            "linear" => Op::Linear,
            "srgb" => Op::Srgb,
            "luma" => Op::Luma,
            "blur" => {
                let sigma = number(s, kv("sigma").ok_or_else(|| bad(s, "blur needs sigma=S"))?)?;
                blur_weights(Blur::Gaussian { sigma })?;
                Op::Blur { sigma }
            }
            "box" => {
                let radius = number(s, kv("radius").ok_or_else(|| bad(s, "box needs radius=R"))?)?;
                blur_weights(Blur::Box { radius })?;
                Op::BoxBlur { radius }
            }
            "resize" => {
                let mut parts = args.split(':');
                let size = parts.next().unwrap_or("");
                let (w, h) = size
                    .split_once('x')
                    .ok_or_else(|| bad(s, "resize needs a size, e.g. resize:1920x1080"))?;
                let (width, height): (u32, u32) = (number(s, w)?, number(s, h)?);
                if width == 0 || height == 0 {
                    return Err(bad(s, "a resize needs a size of at least 1x1"));
                }
                let filter = match parts.next() {
                    None | Some("bilinear") => ResizeFilter::Bilinear,
                    Some("area") => ResizeFilter::Area,
                    Some(_) => return Err(bad(s, "the resize filter is `bilinear` or `area`")),
                };
                Op::Resize {
                    width,
                    height,
                    filter,
                }
            }
            "adjust" => {
                let get = |k: &str, default: f32| kv(k).map_or(Ok(default), |v| number(s, v));
                let op = Op::Adjust {
                    brightness: get("brightness", 0.0)?,
                    contrast: get("contrast", 1.0)?,
                    gamma: get("gamma", 1.0)?,
                };
                if let Op::Adjust { gamma, .. } = op {
                    if !(gamma > 0.0 && gamma.is_finite()) {
                        return Err(bad(s, "gamma must be positive"));
                    }
                }
                op
            }
            _ => {
                return Err(bad(
                    s,
                    "known operations: linear, srgb, luma, blur:sigma=S, box:radius=R, \
                     resize:WxH[:area], adjust:brightness=B;contrast=C;gamma=G",
                ))
            }
        };
        Ok(op)
    }
}

/// Parses a comma-separated chain, e.g. `linear,blur:sigma=3,resize:1920x1080,srgb`.
///
/// # Errors
/// [`Error::InvalidParameter`] naming the operation that is wrong.
///
/// ```
/// let chain = vramkit::image::parse_chain("linear,blur:sigma=3,resize:1920x1080,srgb")?;
/// assert_eq!(chain.len(), 4);
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn parse_chain(s: &str) -> Result<Vec<Op>> {
    let ops: Vec<Op> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<_>>()?;
    if ops.is_empty() {
        return Err(bad(s, "the chain is empty; give at least one operation"));
    }
    Ok(ops)
}

impl Op {
    /// The blur radius (the halo this op needs on each side), 0 for the others.
    pub fn radius(&self) -> u32 {
        match *self {
            Op::Blur { sigma } => (3.0 * sigma).ceil() as u32,
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
                    let s = full_in as f32 / full_out as f32;
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
                    (lo.min(full_in - 1), hi.max(lo + 1))
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
