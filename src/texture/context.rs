//! The context's texture calls: allocate, release, describe, upload and download levels.

use crate::backend::Backend;
use crate::lock;
use crate::memory::{EventKind, TextureHandle};
use crate::texture::{TextureDesc, TextureInfo};
use crate::types::error::Result;
use crate::Context;

impl<B: Backend> Context<B> {
    /// Allocates a texture, counted in the budget with the bytes the driver holds for it
    /// (at least [`TextureDesc::estimated_bytes`]) and in the statistics as kind
    /// [`MemoryKind::Texture`](crate::MemoryKind::Texture). Its texels read as zeros.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for a zero side or a bad mip
    /// count; [`Error::TooLarge`](crate::Error::TooLarge) for a side past the device's largest;
    /// [`Error::Unsupported`](crate::Error::Unsupported) for storage usage of a format kernels
    /// cannot store to; [`Error::OverBudget`](crate::Error::OverBudget);
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    ///
    /// ```
    /// use vramkit::{Context, ContextDesc, TextureDesc, TextureFormat, MemoryKind};
    /// let ctx = Context::host(ContextDesc::default());
    /// let t = ctx.alloc_texture(TextureDesc::new("frame", 1920, 1080, TextureFormat::Rgba8Unorm))?;
    /// ctx.upload_texture(t, &vec![7u8; 1920 * 1080 * 4])?;
    /// assert_eq!(ctx.download_texture(t)?[0], 7);
    /// assert_eq!(ctx.stats().kind(MemoryKind::Texture).reserved, 1920 * 1080 * 4);
    /// ctx.release_texture(t)?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn alloc_texture(&self, desc: TextureDesc) -> Result<TextureHandle> {
        lock(&self.mem).alloc_texture(&self.backend, desc)
    }

    /// Releases a texture; it is freed once the work recorded on it has run.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle) for a released or foreign handle.
    pub fn release_texture(&self, handle: TextureHandle) -> Result<()> {
        lock(&self.mem).release_texture(&self.backend, handle)
    }

    /// The texture's description and the bytes it counts in the budget.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn texture_info(&self, handle: TextureHandle) -> Result<TextureInfo> {
        lock(&self.mem).texture_info(handle)
    }

    /// Writes mip level 0 from `data`, rows tightly packed (`width × texel size` bytes each),
    /// through the staging ring in rows padded to 256 bytes.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) when `data` is not the level's
    /// size; [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn upload_texture(&self, handle: TextureHandle, data: &[u8]) -> Result<()> {
        self.upload_texture_level(handle, 0, data)
    }

    /// Writes mip level `mip` from `data`, as [`upload_texture`](Self::upload_texture).
    ///
    /// # Errors
    /// As [`upload_texture`](Self::upload_texture);
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for a level the texture
    /// lacks.
    pub fn upload_texture_level(&self, handle: TextureHandle, mip: u32, data: &[u8]) -> Result<()> {
        self.transfer(|t| t.upload_texture(handle, mip, data))?;
        lock(&self.mem).record_texture_transfer(EventKind::Upload, handle, data.len() as u64);
        Ok(())
    }

    /// Reads mip level 0 back, rows tightly packed. Waits for the device.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle);
    /// [`Error::HostOutOfMemory`](crate::Error::HostOutOfMemory).
    pub fn download_texture(&self, handle: TextureHandle) -> Result<Vec<u8>> {
        self.download_texture_level(handle, 0)
    }

    /// Reads mip level `mip` back, as [`download_texture`](Self::download_texture).
    ///
    /// # Errors
    /// As [`download_texture`](Self::download_texture);
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for a level the texture
    /// lacks.
    pub fn download_texture_level(&self, handle: TextureHandle, mip: u32) -> Result<Vec<u8>> {
        let info = self.texture_info(handle)?;
        let bytes = if mip < info.desc.mip_levels {
            info.desc.level_bytes(mip)
        } else {
            0
        };
        let mut out =
            crate::types::host_bytes::host_buffer(bytes, "the result of a texture download")?;
        self.transfer(|t| t.download_texture(handle, mip, &mut out))?;
        lock(&self.mem).record_texture_transfer(EventKind::Download, handle, bytes);
        Ok(out)
    }
}
