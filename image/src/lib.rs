//! 4K image processing within a memory budget: operation chains, the working-set math of a
//! frame, and tiling that gives the same output as an untiled run.
//!
//! - **Alpha.** Blur and resize filter premultiplied alpha and hand on straight alpha (the
//!   rule is in [`vramkit_kernels::image`]); colour ops keep alpha.
//! - **Stage formats.** Frames between ops are held in the working format, except that an RGBA8
//!   chain holds the stages from `linear` up to the `srgb` that ends them in RGBA32F (8-bit
//!   linear light loses 8–13 levels in the shadows): [`Pipeline::stage_formats`], which the
//!   planner's byte counts and the run both follow.
//! - **Fused ends.** On 8-bit frames a leading `linear` and a trailing `srgb` run inside the
//!   filters next to them, which read and write sRGB-encoded RGBA8, and with the RGBA8 working
//!   format a blur followed by an exact half-size area resize runs as one `blur_area2`
//!   (`fuse.rs`; its f16 intermediate is not the RGBA32F working format's f32 throughout): the
//!   default chain is three kernels (two with RGBA8), not seven (five with RGBA8).
//! - **16-bit frames.** [`Pipeline::run_rgba16`] takes and returns four `u16` per pixel; they
//!   travel as [`PixelFormat::Rgba16`] at the edges and are filtered in RGBA32F whatever the
//!   working format. `run` and `run_rgba16` are one generic run (`run.rs`), over the host
//!   channel type.
//!
//! The `image_4k` binary (feature `cli`, on by default) runs chains over photo folders:
//! `cargo run --release -p vramkit-image -- photos/ --out out`; `README.md` has its flags.

#![deny(clippy::unwrap_used)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod fuse;
mod ops;
mod parse;
mod pipeline;
mod plan;
mod run;
mod stages;

pub use ops::{Op, Rect, MAX_ADJUST, MAX_FRAME_PIXELS, MAX_GAMMA, MAX_SIDE, MIN_GAMMA};
pub use parse::{format_chain, parse_chain};
pub use pipeline::{FrameReport, Pipeline};
pub use vramkit_kernels::image::PixelFormat;

/// Bytes of a `width × height` frame in `format`, rows packed (saturating at `u64::MAX`).
///
/// ```
/// use vramkit_image::{frame_bytes, PixelFormat};
/// assert_eq!(frame_bytes(3840, 2160, PixelFormat::Rgba8), 33_177_600);
/// assert_eq!(frame_bytes(3840, 2160, PixelFormat::Rgba32F), 132_710_400);
/// ```
pub fn frame_bytes(width: u32, height: u32, format: PixelFormat) -> u64 {
    (u64::from(width) * u64::from(height)).saturating_mul(format.bytes_per_pixel())
}

/// Bytes of a texture-to-buffer copy of such a frame: wgpu pads each row to 256 bytes
/// (saturating at `u64::MAX`).
///
/// ```
/// use vramkit_image::{texture_copy_bytes, PixelFormat};
/// assert_eq!(texture_copy_bytes(1001, 2, PixelFormat::Rgba8), 2 * 4096);
/// ```
pub fn texture_copy_bytes(width: u32, height: u32, format: PixelFormat) -> u64 {
    (u64::from(width) * format.bytes_per_pixel())
        .next_multiple_of(256)
        .saturating_mul(u64::from(height))
}

/// A deterministic RGBA8 test chart: colour gradients, a grid of fine lines, checkerboards of
/// several pitches and rows of small glyph-like marks, so that blurs and resizes visibly do
/// something. The 4K tool processes it with `--chart`.
///
/// ```
/// let chart = vramkit_image::test_chart(64, 32);
/// assert_eq!(chart.len(), 64 * 32 * 4);
/// assert_eq!(chart, vramkit_image::test_chart(64, 32));
/// ```
pub fn test_chart(width: u32, height: u32) -> Vec<u8> {
    let mut px = Vec::with_capacity(width as usize * height as usize * 4);
    for y in 0..height {
        for x in 0..width {
            let (fx, fy) = (x as f32 / width as f32, y as f32 / height as f32);
            let mut rgb = [
                (255.0 * fx) as u8,
                (255.0 * fy) as u8,
                (255.0 * (1.0 - fx) * fy) as u8,
            ];
            let band = (y * 6 / height.max(1)) as u8;
            let detail = match band {
                // Fine lines, one pixel wide, every 8 pixels.
                1 => x % 8 == 0 || y % 8 == 0,
                // Checkerboards of 1, 2 and 4 pixels across the width.
                2 => {
                    let pitch = x * 3 / width.max(1);
                    ((x >> pitch) + (y >> pitch)).is_multiple_of(2)
                }
                // Glyph-like marks: 5×7 cells with pseudo-random strokes, like lines of text.
                3 | 4 => {
                    let (cx, cy) = (x / 6, y / 9);
                    let (gx, gy) = (x % 6, y % 9);
                    let bits = (cx.wrapping_mul(2_654_435_761) ^ cy.wrapping_mul(40_503)) >> 7;
                    gx < 5 && gy < 7 && (bits >> ((gy * 5 + gx) % 31)) & 1 == 1
                }
                _ => false,
            };
            if detail {
                rgb = rgb.map(|c| 255 - c);
            }
            px.extend_from_slice(&[rgb[0], rgb[1], rgb[2], 255]);
        }
    }
    px
}

/// The README's example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
