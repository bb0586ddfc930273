//! The context's textures ([`Context::textures`]): allocate, release, describe, upload and
//! download levels, and launches that bind them ([`Textures::dispatch`]).

use crate::backend::Backend;
use crate::memory::{EventKind, TextureHandle};
use crate::texture::{TextureDesc, TextureInfo};
use crate::types::error::Result;
use crate::Context;

/// The context's textures, one driver allocation each, held by the context's memory manager
/// like its buffers (the budget, the statistics, leaks, the timeline). From
/// [`Context::textures`].
pub struct Textures<'a, B: Backend> {
    pub(crate) ctx: &'a Context<B>,
}

impl<B: Backend> Context<B> {
    /// The context's textures: allocate, upload, download, launch kernels that bind them.
    pub fn textures(&self) -> Textures<'_, B> {
        Textures { ctx: self }
    }
}

impl<B: Backend> Textures<'_, B> {
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
    /// use vramkit::texture::{TextureDesc, TextureFormat};
    /// use vramkit::{Context, ContextDesc, MemoryKind};
    /// let ctx = Context::host(ContextDesc::default());
    /// let t = ctx.textures().alloc(TextureDesc::new("frame", 1920, 1080, TextureFormat::Rgba8Unorm))?;
    /// ctx.textures().upload(t, &vec![7u8; 1920 * 1080 * 4])?;
    /// assert_eq!(ctx.textures().download(t)?[0], 7);
    /// assert_eq!(ctx.stats().kind(MemoryKind::Texture).reserved, 1920 * 1080 * 4);
    /// ctx.textures().release(t)?;
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn alloc(&self, desc: TextureDesc) -> Result<TextureHandle> {
        self.ctx.manager().alloc_texture(&self.ctx.backend, desc)
    }

    /// Releases a texture; it is freed once the work recorded on it has run.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle) for a released or foreign handle.
    pub fn release(&self, handle: TextureHandle) -> Result<()> {
        self.ctx
            .manager()
            .release_texture(&self.ctx.backend, handle)
    }

    /// The texture's description and the bytes it counts in the budget.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn info(&self, handle: TextureHandle) -> Result<TextureInfo> {
        self.ctx.manager().texture_info(handle)
    }

    /// Writes mip level 0 from `data`, rows tightly packed (`width × texel size` bytes each),
    /// through the staging ring in rows padded to 256 bytes.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) when `data` is not the level's
    /// size; [`Error::StaleHandle`](crate::Error::StaleHandle).
    pub fn upload(&self, handle: TextureHandle, data: &[u8]) -> Result<()> {
        self.upload_level(handle, 0, data)
    }

    /// Writes mip level `mip` from `data`, as [`upload_texture`](Self::upload).
    ///
    /// # Errors
    /// As [`upload_texture`](Self::upload);
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for a level the texture
    /// lacks.
    pub fn upload_level(&self, handle: TextureHandle, mip: u32, data: &[u8]) -> Result<()> {
        self.ctx.transfer(|t| t.upload_texture(handle, mip, data))?;
        self.ctx
            .manager()
            .record_texture_transfer(EventKind::Upload, handle, data.len() as u64);
        Ok(())
    }

    /// Reads mip level 0 back, rows tightly packed. Waits for the device.
    ///
    /// # Errors
    /// [`Error::StaleHandle`](crate::Error::StaleHandle);
    /// [`Error::HostOutOfMemory`](crate::Error::HostOutOfMemory).
    pub fn download(&self, handle: TextureHandle) -> Result<Vec<u8>> {
        self.download_level(handle, 0)
    }

    /// Reads mip level `mip` back, as [`download_texture`](Self::download).
    ///
    /// # Errors
    /// As [`download_texture`](Self::download);
    /// [`Error::InvalidParameter`](crate::Error::InvalidParameter) for a level the texture
    /// lacks.
    pub fn download_level(&self, handle: TextureHandle, mip: u32) -> Result<Vec<u8>> {
        let info = self.info(handle)?;
        let bytes = if mip < info.desc.mip_levels {
            info.desc.level_bytes(mip)
        } else {
            0
        };
        let mut out =
            crate::types::host_bytes::host_buffer(bytes, "the result of a texture download")?;
        self.ctx
            .transfer(|t| t.download_texture(handle, mip, &mut out))?;
        self.ctx
            .manager()
            .record_texture_transfer(EventKind::Download, handle, bytes);
        Ok(out)
    }
}
