//! CPU twins of the image kernels, on whole images of `[f32; 4]` (RGBA32F) or `u32` (RGBA8)
//! pixels, row-major without padding. They do the same f32 arithmetic in the same order as the
//! WGSL, so the tests can state tight tolerances. Filters (blur, resize) work on premultiplied
//! alpha as the kernels do (shaders/io/alpha.wgsl): [`premultiply`] in, [`unpremultiply`] out.

use super::image::{blur_weights, Blur, ColorOp, ResizeFilter};
use vramkit::Result;

/// An RGBA32F pixel.
pub type Rgba = [f32; 4];

/// RGBA8 to RGBA32F.
pub fn unpack_rgba8_cpu(src: &[u32]) -> Vec<Rgba> {
    src.iter()
        .map(|&p| std::array::from_fn(|c| ((p >> (8 * c)) & 0xFF) as f32 / 255.0))
        .collect()
}

/// RGBA32F to RGBA8, clamped and rounded to nearest.
pub fn pack_rgba8_cpu(src: &[Rgba]) -> Vec<u32> {
    src.iter()
        .map(|v| {
            (0..4).fold(0u32, |acc, c| {
                let q = (v[c].clamp(0.0, 1.0) * 255.0 + 0.5).floor() as u32;
                acc | (q << (8 * c))
            })
        })
        .collect()
}

/// `(rgb · a, a)`: what a filter kernel reads (`load_premultiplied`).
pub fn premultiply(v: &Rgba) -> Rgba {
    [v[0] * v[3], v[1] * v[3], v[2] * v[3], v[3]]
}

/// `(rgb / a, a)`, colour 0 where alpha is 0 or less: what a filter kernel writes
/// (`store_straight`).
pub fn unpremultiply(v: &Rgba) -> Rgba {
    if v[3] > 0.0 {
        [v[0] / v[3], v[1] / v[3], v[2] / v[3], v[3]]
    } else {
        [0.0, 0.0, 0.0, v[3]]
    }
}

fn axpy(acc: &mut Rgba, w: f32, v: &Rgba) {
    for c in 0..4 {
        acc[c] += w * v[c];
    }
}

/// Separable blur with clamp-to-edge on premultiplied alpha: the horizontal pass, then the
/// vertical one.
///
/// # Errors
/// As [`blur_weights`].
pub fn blur_cpu(src: &[Rgba], w: u32, h: u32, blur: Blur) -> Result<Vec<Rgba>> {
    check_pixels(src, w, h)?;
    let weights = blur_weights(blur)?;
    let src: Vec<Rgba> = src.iter().map(premultiply).collect();
    let tmp = blur_pass(&src, w, h, &weights, true);
    let out = blur_pass(&tmp, w, h, &weights, false);
    Ok(out.iter().map(unpremultiply).collect())
}

/// Checks that `src` holds exactly `w × h` pixels, at least one.
fn check_pixels(src: &[Rgba], w: u32, h: u32) -> Result<()> {
    let want = u64::from(w) * u64::from(h);
    if want == 0 || src.len() as u64 != want {
        return Err(vramkit::Error::ShapeMismatch {
            expected: format!("{w}×{h} = {want} pixels (at least one)"),
            actual: format!("{} pixels", src.len()),
        });
    }
    Ok(())
}

/// One pass of the separable blur, along rows (`horizontal`) or columns, clamping at the edges.
fn blur_pass(src: &[Rgba], w: u32, h: u32, weights: &[f32], horizontal: bool) -> Vec<Rgba> {
    let r = (weights.len() / 2) as i64;
    let (w, h) = (i64::from(w), i64::from(h));
    let mut out = vec![[0f32; 4]; src.len()];
    for y in 0..h {
        for x in 0..w {
            let mut acc = [0f32; 4];
            for (i, &wt) in weights.iter().enumerate() {
                let (sx, sy) = if horizontal {
                    ((x + i as i64 - r).clamp(0, w - 1), y)
                } else {
                    (x, (y + i as i64 - r).clamp(0, h - 1))
                };
                axpy(&mut acc, wt, &src[(sy * w + sx) as usize]);
            }
            out[(y * w + x) as usize] = acc;
        }
    }
    out
}

fn lerp(a: &Rgba, b: &Rgba, t: f32) -> Rgba {
    std::array::from_fn(|c| a[c] * (1.0 - t) + b[c] * t)
}

/// Resize `src` (`w×h`) to `dw×dh`, on premultiplied alpha.
pub fn resize_cpu(
    src: &[Rgba],
    w: u32,
    h: u32,
    dw: u32,
    dh: u32,
    filter: ResizeFilter,
) -> Vec<Rgba> {
    let sx = w as f32 / dw as f32;
    let sy = h as f32 / dh as f32;
    let src: Vec<Rgba> = src.iter().map(premultiply).collect();
    let at = |x: u32, y: u32| &src[(y * w + x) as usize];
    let mut out = Vec::with_capacity((dw * dh) as usize);
    for y in 0..dh {
        for x in 0..dw {
            let v = match filter {
                ResizeFilter::Bilinear => {
                    let u = ((x as f32 + 0.5) * sx - 0.5).clamp(0.0, (w - 1) as f32);
                    let v = ((y as f32 + 0.5) * sy - 0.5).clamp(0.0, (h - 1) as f32);
                    let (x0, y0) = (u.floor() as u32, v.floor() as u32);
                    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
                    let (tx, ty) = (u - x0 as f32, v - y0 as f32);
                    let top = lerp(at(x0, y0), at(x1, y0), tx);
                    let bottom = lerp(at(x0, y1), at(x1, y1), tx);
                    lerp(&top, &bottom, ty)
                }
                ResizeFilter::Area => {
                    let ax = x as f32 * sx;
                    let bx = (ax + sx).min(w as f32);
                    let ay = y as f32 * sy;
                    let by = (ay + sy).min(h as f32);
                    let mut acc = [0f32; 4];
                    let mut total = 0f32;
                    for yy in ay.floor() as u32..=((by.ceil() as u32).min(h) - 1) {
                        let wy = by.min((yy + 1) as f32) - ay.max(yy as f32);
                        for xx in ax.floor() as u32..=((bx.ceil() as u32).min(w) - 1) {
                            let wt = wy * (bx.min((xx + 1) as f32) - ax.max(xx as f32));
                            axpy(&mut acc, wt, at(xx, yy));
                            total += wt;
                        }
                    }
                    acc.map(|c| c / total)
                }
            };
            out.push(unpremultiply(&v));
        }
    }
    out
}

/// sRGB transfer function, decoding.
pub fn srgb_to_linear_cpu(c: f32) -> f32 {
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// sRGB transfer function, encoding.
pub fn linear_to_srgb_cpu(c: f32) -> f32 {
    if c <= 0.003_130_8 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

/// A per-pixel colour operation.
pub fn color_cpu(src: &[Rgba], op: ColorOp) -> Vec<Rgba> {
    src.iter()
        .map(|v| match op {
            ColorOp::SrgbToLinear => [
                srgb_to_linear_cpu(v[0]),
                srgb_to_linear_cpu(v[1]),
                srgb_to_linear_cpu(v[2]),
                v[3],
            ],
            ColorOp::LinearToSrgb => [
                linear_to_srgb_cpu(v[0]),
                linear_to_srgb_cpu(v[1]),
                linear_to_srgb_cpu(v[2]),
                v[3],
            ],
            ColorOp::Luma => {
                let y = 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
                [y, y, y, v[3]]
            }
            ColorOp::Adjust {
                brightness,
                contrast,
                gamma,
            } => {
                let f = |c: f32| {
                    ((c - 0.5) * contrast + 0.5 + brightness)
                        .clamp(0.0, 1.0)
                        .powf(1.0 / gamma)
                };
                [f(v[0]), f(v[1]), f(v[2]), v[3]]
            }
        })
        .collect()
}
