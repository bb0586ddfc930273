//! The texture vocabulary: formats, usages, descriptions, copies between blocks and textures.

use super::error::{Error, Result};
use super::memory::Label;

/// Rows of texels in a copy between a buffer and a texture start this many bytes apart (a
/// multiple of it): wgpu's `COPY_BYTES_PER_ROW_ALIGNMENT`.
pub const ROW_ALIGNMENT: u64 = 256;

/// The texel formats vramkit's textures take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextureFormat {
    /// 8-bit RGBA, read as [0, 1] floats.
    Rgba8Unorm,
    /// 8-bit RGBA in sRGB: reads decode to linear, writes encode (not a storage format).
    Rgba8UnormSrgb,
    /// 16-bit float RGBA.
    Rgba16Float,
    /// 32-bit float RGBA.
    Rgba32Float,
    /// One 8-bit channel, read as a [0, 1] float (not a storage format).
    R8Unorm,
    /// One 32-bit float channel.
    R32Float,
}

impl TextureFormat {
    /// Every format.
    pub const ALL: [TextureFormat; 6] = [
        TextureFormat::Rgba8Unorm,
        TextureFormat::Rgba8UnormSrgb,
        TextureFormat::Rgba16Float,
        TextureFormat::Rgba32Float,
        TextureFormat::R8Unorm,
        TextureFormat::R32Float,
    ];

    /// Bytes of one texel.
    pub const fn bytes_per_texel(self) -> u32 {
        match self {
            TextureFormat::R8Unorm => 1,
            TextureFormat::Rgba8Unorm | TextureFormat::Rgba8UnormSrgb | TextureFormat::R32Float => {
                4
            }
            TextureFormat::Rgba16Float => 8,
            TextureFormat::Rgba32Float => 16,
        }
    }

    /// Whether kernels may store to textures of this format (WebGPU's storage formats).
    pub const fn storage(self) -> bool {
        !matches!(self, TextureFormat::Rgba8UnormSrgb | TextureFormat::R8Unorm)
    }
}

/// How a texture is used, beyond copies (always allowed): flags combined with `|`.
///
/// ```
/// use vramkit::texture::TextureUsage;
/// let u = TextureUsage::SAMPLED | TextureUsage::STORAGE;
/// assert!(u.contains(TextureUsage::STORAGE));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureUsage(u8);

impl TextureUsage {
    /// Only copies in and out.
    pub const COPY: TextureUsage = TextureUsage(0);
    /// Kernels read it (`textureLoad`, `textureSampleLevel`).
    pub const SAMPLED: TextureUsage = TextureUsage(1);
    /// Kernels write it (`textureStore`).
    pub const STORAGE: TextureUsage = TextureUsage(2);

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: TextureUsage) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for TextureUsage {
    type Output = TextureUsage;
    fn bitor(self, rhs: TextureUsage) -> TextureUsage {
        TextureUsage(self.0 | rhs.0)
    }
}

/// What texture to allocate. See [`Textures::alloc`](crate::texture::Textures::alloc).
///
/// ```
/// use vramkit::texture::{TextureDesc, TextureFormat};
/// let d = TextureDesc::new("frame", 3840, 2160, TextureFormat::Rgba8Unorm);
/// // Rows of 15,360 bytes are already a multiple of 256.
/// assert_eq!(d.estimated_bytes(), 3840 * 2160 * 4);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextureDesc {
    /// A label for reports and errors.
    pub label: Label,
    /// Width of mip level 0 in texels.
    pub width: u32,
    /// Height of mip level 0 in texels.
    pub height: u32,
    /// Texel format.
    pub format: TextureFormat,
    /// Mip levels, 1 (default) up to a full chain (`⌊log2(max(width, height))⌋ + 1`).
    pub mip_levels: u32,
    /// How kernels use it (default [`TextureUsage::SAMPLED`]).
    pub usage: TextureUsage,
    /// A group for statistics and reports, as [`AllocDesc::tag`](crate::AllocDesc::tag).
    pub tag: Option<Label>,
}

impl TextureDesc {
    /// A sampled texture of one mip level.
    pub fn new(label: impl Into<Label>, width: u32, height: u32, format: TextureFormat) -> Self {
        Self {
            label: label.into(),
            width,
            height,
            format,
            mip_levels: 1,
            usage: TextureUsage::SAMPLED,
            tag: None,
        }
    }

    /// Sets the number of mip levels.
    pub fn mip_levels(mut self, n: u32) -> Self {
        self.mip_levels = n;
        self
    }

    /// Sets the usage.
    pub fn usage(mut self, usage: TextureUsage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the tag.
    pub fn tag(mut self, tag: impl Into<Label>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Width and height of mip level `mip` (each halved per level, at least 1).
    pub fn level_size(&self, mip: u32) -> [u32; 2] {
        let at = |s: u32| s.checked_shr(mip).unwrap_or(0).max(1);
        [at(self.width), at(self.height)]
    }

    /// Bytes of one row of level `mip`, padded to [`ROW_ALIGNMENT`].
    pub fn padded_row(&self, mip: u32) -> u64 {
        let [w, _] = self.level_size(mip);
        // At most 2^32 texels of 16 bytes: no overflow, and no rounding past u64::MAX.
        (u64::from(w) * u64::from(self.format.bytes_per_texel())).next_multiple_of(ROW_ALIGNMENT)
    }

    /// Bytes of the texels of level `mip`, rows unpadded (what an upload of it takes);
    /// `u64::MAX` where that does not fit a `u64` (no device takes such a texture).
    pub fn level_bytes(&self, mip: u32) -> u64 {
        let [w, h] = self.level_size(mip);
        (u64::from(w) * u64::from(h)).saturating_mul(u64::from(self.format.bytes_per_texel()))
    }

    /// Bytes of every level's texels, rows unpadded: what the texture holds (saturating at
    /// `u64::MAX`).
    pub fn texel_bytes(&self) -> u64 {
        self.sum_levels(|m| self.level_bytes(m))
    }

    /// Bytes of every level with rows padded to [`ROW_ALIGNMENT`]: the least a texture takes
    /// in the budget (the driver's figure, where the backend reports a larger one); saturating
    /// at `u64::MAX`, for sides and mip counts that no device takes.
    pub fn estimated_bytes(&self) -> u64 {
        self.sum_levels(|m| {
            self.padded_row(m)
                .saturating_mul(u64::from(self.level_size(m)[1]))
        })
    }

    /// Sums `bytes` over the mip levels, saturating. Levels from 32 on are all 1×1, so a
    /// description with billions of levels costs 33 calls, not billions.
    fn sum_levels(&self, bytes: impl Fn(u32) -> u64) -> u64 {
        let distinct = self.mip_levels.min(32);
        let tail = u64::from(self.mip_levels - distinct);
        (0..distinct)
            .map(&bytes)
            .fold(0u64, u64::saturating_add)
            .saturating_add(tail.saturating_mul(if tail > 0 { bytes(32) } else { 0 }))
    }

    /// Checks the description against the device's largest texture side.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a zero side or a mip count outside
    /// `1..=⌊log2(max side)⌋ + 1`; [`Error::TooLarge`] for a side past `max_side`;
    /// [`Error::Unsupported`] for storage usage of a format kernels cannot store to.
    pub fn validate(&self, max_side: u32) -> Result<()> {
        if self.width == 0 || self.height == 0 {
            return Err(Error::InvalidParameter {
                name: "width/height",
                value: format!("{}×{}", self.width, self.height),
                reason: "a texture has at least one texel per side",
            });
        }
        let side = self.width.max(self.height);
        if side > max_side {
            return Err(Error::TooLarge {
                label: self.label.to_string(),
                requested: u64::from(side),
                max: u64::from(max_side),
                unit: "texels",
                what: "the longest side of a 2D texture on this device; process the image in \
                       tiles or keep it in a buffer",
            });
        }
        let full_chain = 32 - side.leading_zeros();
        if self.mip_levels == 0 || self.mip_levels > full_chain {
            return Err(Error::InvalidParameter {
                name: "mip_levels",
                value: self.mip_levels.to_string(),
                reason: "a texture has 1 mip level up to a full chain (⌊log2(max side)⌋ + 1)",
            });
        }
        if self.usage.contains(TextureUsage::STORAGE) && !self.format.storage() {
            return Err(Error::Unsupported {
                what: format!("`{}`: storage usage of {:?}", self.label, self.format),
                reason: "kernels cannot store to this format (not a WebGPU storage format); \
                         use Rgba8Unorm or R32Float and convert when reading"
                    .into(),
            });
        }
        Ok(())
    }
}

/// A rectangle of one mip level, and the layout of its rows in a buffer, for copies between
/// blocks and textures ([`Storage::copy_to_texture`](crate::backend::Storage::copy_to_texture)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureCopy {
    /// The mip level.
    pub mip: u32,
    /// The rectangle's top-left texel.
    pub origin: [u32; 2],
    /// The rectangle's width and height in texels.
    pub size: [u32; 2],
    /// Bytes from one row to the next in the buffer: a multiple of [`ROW_ALIGNMENT`], at least
    /// a row of the rectangle.
    pub bytes_per_row: u64,
}

impl TextureCopy {
    /// Bytes the rows of the rectangle span in the buffer.
    pub fn buffer_bytes(&self) -> u64 {
        self.bytes_per_row * u64::from(self.size[1])
    }
}

/// What a context knows of a live texture. See
/// [`Textures::info`](crate::texture::Textures::info).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextureInfo {
    /// Its description.
    pub desc: TextureDesc,
    /// Bytes it counts in the budget: the driver's figure where the backend reports one, at
    /// least [`TextureDesc::estimated_bytes`].
    pub bytes: u64,
    /// What the driver reported, where it did.
    pub driver_bytes: Option<u64>,
}
