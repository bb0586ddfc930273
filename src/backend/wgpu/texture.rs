//! Textures on wgpu: `wgpu::Texture`s made in error scopes, their driver size read through
//! `wgpu-hal` on Vulkan, and copies between blocks and textures.

use super::{kernel, WgpuBackend, WgpuBlock, WgpuKernel};
use crate::backend::KernelBinding;
use crate::types::error::{Error, Result};
use crate::types::texture::{TextureCopy, TextureDesc, TextureFormat, TextureUsage};
use crate::types::{MemoryKind, QueueIndex};

/// A texture of a [`WgpuBackend`].
#[derive(Debug)]
pub struct WgpuTexture {
    /// The wgpu texture, for binding it in passes.
    pub texture: wgpu::Texture,
}

fn format(f: TextureFormat) -> wgpu::TextureFormat {
    match f {
        TextureFormat::Rgba8Unorm => wgpu::TextureFormat::Rgba8Unorm,
        TextureFormat::Rgba8UnormSrgb => wgpu::TextureFormat::Rgba8UnormSrgb,
        TextureFormat::Rgba16Float => wgpu::TextureFormat::Rgba16Float,
        TextureFormat::Rgba32Float => wgpu::TextureFormat::Rgba32Float,
        TextureFormat::R8Unorm => wgpu::TextureFormat::R8Unorm,
        TextureFormat::R32Float => wgpu::TextureFormat::R32Float,
    }
}

fn usages(u: TextureUsage) -> wgpu::TextureUsages {
    let mut usage = wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST;
    if u.contains(TextureUsage::SAMPLED) {
        usage |= wgpu::TextureUsages::TEXTURE_BINDING;
    }
    if u.contains(TextureUsage::STORAGE) {
        usage |= wgpu::TextureUsages::STORAGE_BINDING;
    }
    usage
}

impl WgpuBackend {
    pub(super) fn new_texture(&self, desc: &TextureDesc) -> Result<(WgpuTexture, Option<u64>)> {
        self.check_lost()?;
        let (texture, error) = self.scoped(|| {
            self.device.create_texture(&wgpu::TextureDescriptor {
                label: Some(&desc.label),
                size: wgpu::Extent3d {
                    width: desc.width,
                    height: desc.height,
                    depth_or_array_layers: 1,
                },
                mip_level_count: desc.mip_levels,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: format(desc.format),
                usage: usages(desc.usage),
                view_formats: &[],
            })
        });
        if let Some(e) = error {
            self.check_lost()?;
            return Err(match e {
                wgpu::Error::OutOfMemory { .. } => Error::OutOfMemory {
                    requested: desc.estimated_bytes(),
                    kind: MemoryKind::Texture,
                    detail: format!("`{}`: the device has no memory for the texture", desc.label),
                },
                e => Error::Backend {
                    message: format!("creating texture `{}`: {e}", desc.label),
                },
            });
        }
        let driver = driver_bytes(&texture);
        Ok((WgpuTexture { texture }, driver))
    }

    /// Records a copy between rows of `block` at `offset` and a rectangle of `texture`.
    pub(super) fn texture_copy(
        &self,
        block: &WgpuBlock,
        offset: u64,
        texture: &WgpuTexture,
        copy: TextureCopy,
        to_texture: bool,
    ) -> Result<QueueIndex> {
        block.unmap_for_gpu();
        let buffer = wgpu::TexelCopyBufferInfo {
            buffer: &block.buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset,
                bytes_per_row: Some(u32::try_from(copy.bytes_per_row).map_err(|_| {
                    Error::Internal {
                        message: format!("a texture copy of {} bytes per row", copy.bytes_per_row),
                    }
                })?),
                rows_per_image: Some(copy.size[1]),
            },
        };
        let image = wgpu::TexelCopyTextureInfo {
            texture: &texture.texture,
            mip_level: copy.mip,
            origin: wgpu::Origin3d {
                x: copy.origin[0],
                y: copy.origin[1],
                z: 0,
            },
            aspect: wgpu::TextureAspect::All,
        };
        let extent = wgpu::Extent3d {
            width: copy.size[0],
            height: copy.size[1],
            depth_or_array_layers: 1,
        };
        self.record(|e| {
            if to_texture {
                e.copy_buffer_to_texture(buffer, image, extent);
            } else {
                e.copy_texture_to_buffer(image, buffer, extent);
            }
        })
    }
}

impl WgpuBackend {
    /// The bind group of a launch that binds textures; wgpu's validation of it (a texture's
    /// sample type against the entry point's, e.g. an unfilterable Rgba32Float texture with a
    /// filtering sampler) comes back as an error.
    pub(super) fn texture_bind_group(
        &self,
        k: &WgpuKernel,
        bindings: &[KernelBinding<'_, WgpuBlock, WgpuTexture>],
        params: &[u8],
    ) -> Result<wgpu::BindGroup> {
        self.check_lost()?;
        let views: Vec<Option<wgpu::TextureView>> = bindings
            .iter()
            .map(|b| match b {
                KernelBinding::Texture { texture, mip } => {
                    Some(texture.texture.create_view(&wgpu::TextureViewDescriptor {
                        base_mip_level: *mip,
                        mip_level_count: Some(1),
                        ..Default::default()
                    }))
                }
                _ => None,
            })
            .collect();
        let sampler = self.sampler.get_or_init(|| {
            self.device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("vramkit linear clamp"),
                mag_filter: wgpu::FilterMode::Linear,
                min_filter: wgpu::FilterMode::Linear,
                ..Default::default()
            })
        });
        let uniform = kernel::params_buffer(&self.device, params);
        for b in bindings {
            if let KernelBinding::Buffer(r) = b {
                r.block.unmap_for_gpu();
            }
        }
        let resources = bindings
            .iter()
            .zip(&views)
            .map(|(b, view)| match (b, view) {
                (KernelBinding::Buffer(r), _) => kernel::buffer_resource(r),
                (_, Some(view)) => wgpu::BindingResource::TextureView(view),
                _ => wgpu::BindingResource::Sampler(sampler),
            })
            .collect();
        let (group, error) =
            self.scoped(|| kernel::create_bind_group(&self.device, k, resources, uniform.as_ref()));
        match error {
            None => Ok(group),
            Some(e) => {
                self.check_lost()?;
                Err(Error::Unsupported {
                    what: format!("the bindings of kernel `{}`", k.label),
                    reason: format!(
                        "the device refused them ({e}); a filtering sampler needs a filterable \
                         texture (Rgba8Unorm, Rgba16Float; Rgba32Float only where the adapter \
                         offers FLOAT32_FILTERABLE)"
                    ),
                })
            }
        }
    }
}

/// The bytes the driver holds for `texture`, where the API tells: on Vulkan, the size of the
/// memory wgpu-hal bound the image to (its `vkGetImageMemoryRequirements` size).
fn driver_bytes(texture: &wgpu::Texture) -> Option<u64> {
    // SAFETY: the hal texture is only read (its memory's size), never destroyed or used past
    // this borrow.
    let hal = unsafe { texture.as_hal::<wgpu::hal::api::Vulkan>() }?;
    // SAFETY: the memory is only read, not freed.
    match unsafe { hal.memory() } {
        wgpu::hal::vulkan::TextureMemory::Allocation(a) => Some(a.size()),
        _ => None,
    }
}
