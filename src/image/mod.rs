//! 4K image processing within a memory budget: operation chains, the working-set math of a
//! frame, and tiling that gives the same output as an untiled run.

mod ops;
mod pipeline;

pub use crate::kernels::image::PixelFormat;
pub use ops::{parse_chain, Op, Rect};
pub use pipeline::{FrameReport, Pipeline};

/// Bytes of a `width × height` frame in `format`, rows packed.
///
/// ```
/// use vramkit::image::{frame_bytes, PixelFormat};
/// assert_eq!(frame_bytes(3840, 2160, PixelFormat::Rgba8), 33_177_600);
/// assert_eq!(frame_bytes(3840, 2160, PixelFormat::Rgba32F), 132_710_400);
/// ```
pub fn frame_bytes(width: u32, height: u32, format: PixelFormat) -> u64 {
    u64::from(width) * u64::from(height) * format.bytes_per_pixel()
}

/// Bytes of a texture-to-buffer copy of such a frame: wgpu pads each row to 256 bytes.
///
/// ```
/// use vramkit::image::{texture_copy_bytes, PixelFormat};
/// assert_eq!(texture_copy_bytes(1001, 2, PixelFormat::Rgba8), 2 * 4096);
/// ```
pub fn texture_copy_bytes(width: u32, height: u32, format: PixelFormat) -> u64 {
    (u64::from(width) * format.bytes_per_pixel()).next_multiple_of(256) * u64::from(height)
}
