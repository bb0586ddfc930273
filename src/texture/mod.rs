//! Textures: what they are (formats, usages, descriptions) and what they cost.
//!
//! A texture is one driver allocation (a wgpu texture; on CUDA and the host, linear device
//! memory with 256-byte-aligned rows), never sub-allocated from a block, held by the context's
//! memory manager like a buffer: a generational [`TextureHandle`](crate::TextureHandle), the
//! budget, the statistics (kind [`MemoryKind::Texture`](crate::MemoryKind::Texture) and its
//! tag), leaks, the timeline. Its bytes in the budget are the driver's figure where the API
//! tells (Vulkan's memory requirements), and never less than [`TextureDesc::estimated_bytes`]
//! (every mip level's rows padded to 256 bytes, as copies between buffers and textures lay
//! them out).

mod context;
mod dispatch;

pub use crate::types::texture::{
    TextureCopy, TextureDesc, TextureFormat, TextureInfo, TextureUsage, ROW_ALIGNMENT,
};
pub use context::Textures;
pub use dispatch::KernelArg;
