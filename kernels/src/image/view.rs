//! Frames in buffers: their pixel formats and the view of an image in a buffer.

use vramkit::BufferHandle;

/// Pixel formats of frames in buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PixelFormat {
    /// 8-bit RGBA, one `u32` per pixel, R in the low byte.
    Rgba8,
    /// 16-bit RGBA (PNG's 16-bit frames), 8 bytes per pixel: four little-endian `u16`, R
    /// first. Kernels read it as two `u32` words, `R | G << 16` and `B | A << 16` (WGSL has no
    /// 16-bit integers), and only [`convert`](super::convert) takes it: frames are filtered
    /// in RGBA32F.
    Rgba16,
    /// 32-bit float RGBA, 16 bytes per pixel.
    Rgba32F,
    /// 8-bit RGBA holding sRGB-encoded colour (alpha linear), like wgpu's `Rgba8UnormSrgb`:
    /// the bytes of [`Rgba8`](Self::Rgba8), which kernels read as linear light and write from
    /// linear light. A chain's leading `linear` and trailing `srgb` run inside the kernels that
    /// read and write such frames (as the `vramkit-image` crate does); the filters and
    /// [`convert`](super::convert) take it to and from RGBA32F.
    Srgba8,
}

impl PixelFormat {
    /// Bytes per pixel.
    pub const fn bytes_per_pixel(self) -> u64 {
        match self {
            PixelFormat::Rgba8 | PixelFormat::Srgba8 => 4,
            PixelFormat::Rgba16 => 8,
            PixelFormat::Rgba32F => 16,
        }
    }
}

/// An image in a buffer: `height` rows of `stride` pixels, of which the first `width` are the
/// image's.
///
/// ```
/// # let ctx = vramkit::Context::host(Default::default());
/// use vramkit_kernels::image::{ImageView, PixelFormat};
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
