//! Kernel launches that bind textures: [`Textures::dispatch`].

use super::Textures;
use crate::backend::{Backend, BlockRange, Constants, KernelBinding, KernelSource};
use crate::memory::manager::Access;
use crate::signature::Slot;
use crate::texture::TextureUsage;
use crate::types::error::{Error, Result};
use crate::{Binding, BufferHandle, SubmissionIndex, TextureHandle};

/// One binding of a launch that binds textures, in binding order
/// ([`Textures::dispatch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelArg {
    /// A storage buffer.
    Buffer(Binding),
    /// One mip level of a texture, sampled or stored as the kernel declares it.
    Texture {
        /// The texture.
        handle: TextureHandle,
        /// The mip level.
        mip: u32,
    },
    /// A sampler with linear filtering and clamp-to-edge addressing.
    Sampler,
}

impl From<BufferHandle> for KernelArg {
    fn from(h: BufferHandle) -> Self {
        KernelArg::Buffer(h.into())
    }
}

impl From<TextureHandle> for KernelArg {
    fn from(handle: TextureHandle) -> Self {
        KernelArg::Texture { handle, mip: 0 }
    }
}

fn kind(arg: &KernelArg) -> &'static str {
    match arg {
        KernelArg::Buffer(_) => "a buffer",
        KernelArg::Texture { .. } => "a texture",
        KernelArg::Sampler => "the sampler",
    }
}

impl<B: Backend> Textures<'_, B> {
    /// Records a launch of a kernel that binds textures (`texture_2d<f32>` read with
    /// `textureLoad` or `textureSampleLevel`, `texture_storage_2d` written with
    /// `textureStore`) and samplers besides storage buffers: `args[i]` is binding `i` of group
    /// 0, `params` (if not empty) the uniform at binding `args.len()`. Compiled with bounds
    /// checks, as [`Context::dispatch`](crate::Context::dispatch). Textures are bound on the wgpu backend; CUDA
    /// and the host refuse with [`Error::Unsupported`] (their textures are linear memory).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `args` do not match the kernel's bindings one for one (a
    /// stored texture's format included); [`Error::InvalidParameter`] for a mip level the
    /// texture lacks, a texture without the usage its binding needs, or a stored texture bound
    /// twice; [`Error::StaleHandle`]; as [`Context::dispatch`](crate::Context::dispatch) otherwise.
    pub fn dispatch(
        &self,
        kernel: &KernelSource,
        constants: Constants<'_>,
        args: &[KernelArg],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<SubmissionIndex> {
        let kernel = &*kernel.as_checked();
        let k = self.ctx.kernel(kernel, constants)?;
        let (k, signature) = (&k.0, &k.1);
        let label = kernel.label();
        if args.len() != signature.slots.len() {
            return Err(Error::ShapeMismatch {
                expected: format!("{} bindings for kernel `{label}`", signature.slots.len()),
                actual: args.len().to_string(),
            });
        }
        let limits = self.ctx.backend.limits();
        signature.check_params_and_grid(kernel, params.len(), workgroups, limits)?;
        let mut m = self.ctx.manager();
        let mut bindings = Vec::with_capacity(args.len());
        for (i, (slot, arg)) in signature.slots.iter().zip(args).enumerate() {
            let binding = match (slot, arg) {
                (Slot::Buffer { .. }, KernelArg::Buffer(b)) => {
                    let r = m.resolve(b.handle, b.offset, b.size, Access::Bind, limits)?;
                    KernelBinding::Buffer(BlockRange {
                        block: r.block,
                        offset: r.offset,
                        size: r.size,
                    })
                }
                (Slot::Sampled | Slot::Stored(_), &KernelArg::Texture { handle, mip }) => {
                    let t = m.texture(handle)?;
                    let d = &t.desc;
                    let (usage, name) = match slot {
                        Slot::Sampled => (TextureUsage::SAMPLED, "SAMPLED"),
                        _ => (TextureUsage::STORAGE, "STORAGE"),
                    };
                    if mip >= d.mip_levels || !d.usage.contains(usage) {
                        return Err(Error::InvalidParameter {
                            name: "texture",
                            value: format!("`{}` (mip {mip}) at binding {i} of `{label}`", d.label),
                            reason: if mip >= d.mip_levels {
                                "the texture has fewer mip levels"
                            } else if name == "SAMPLED" {
                                "the binding samples it: allocate it with TextureUsage::SAMPLED"
                            } else {
                                "the binding stores to it: allocate it with TextureUsage::STORAGE"
                            },
                        });
                    }
                    if let Slot::Stored(format) = slot {
                        if *format != Some(d.format) {
                            return Err(Error::ShapeMismatch {
                                expected: format!(
                                    "a {format:?} storage texture at binding {i} of `{label}`"
                                ),
                                actual: format!("`{}` ({:?})", d.label, d.format),
                            });
                        }
                        let twice = args.iter().enumerate().any(|(j, a)| {
                            j != i
                                && matches!(a, KernelArg::Texture { handle: h, .. } if *h == handle)
                        });
                        if twice {
                            return Err(Error::InvalidParameter {
                                name: "texture",
                                value: format!("`{}` at binding {i} of `{label}`", d.label),
                                reason: "a texture a kernel stores to can be bound nowhere else \
                                         in the launch; copy it, or use two textures",
                            });
                        }
                    }
                    KernelBinding::Texture {
                        texture: &t.raw,
                        mip,
                    }
                }
                (Slot::Sampler, KernelArg::Sampler) => KernelBinding::Sampler,
                (slot, arg) => {
                    return Err(Error::ShapeMismatch {
                        expected: format!(
                            "{} at binding {i} of kernel `{label}`",
                            match slot {
                                Slot::Buffer { .. } => "a buffer",
                                Slot::Sampled | Slot::Stored(_) => "a texture",
                                Slot::Sampler => "the sampler",
                            }
                        ),
                        actual: kind(arg).into(),
                    })
                }
            };
            bindings.push(binding);
        }
        let ranges: Vec<&BlockRange<'_, B::Block>> = bindings
            .iter()
            .filter_map(|b| match b {
                KernelBinding::Buffer(r) => Some(r),
                _ => None,
            })
            .collect();
        let sizes: Vec<u64> = ranges.iter().map(|r| r.size).collect();
        let blocks: Vec<usize> = ranges
            .iter()
            .map(|r| {
                ranges
                    .iter()
                    .position(|o| std::ptr::eq(o.block, r.block))
                    .unwrap_or(0)
            })
            .collect();
        signature.check_buffers(kernel, &sizes, &blocks)?;
        // SAFETY: every buffer range was resolved inside its block for binding and every mip
        // level checked to exist; the kernel was compiled with bounds checks (`checked()`);
        // the bindings match the entry point's kinds one for one (formats, usages, a stored
        // texture bound once), and the params and grid were checked against it and the device.
        let index = unsafe {
            self.ctx
                .backend
                .dispatch_textures(k, &bindings, params, workgroups)?
        };
        drop(bindings);
        for arg in args {
            match *arg {
                KernelArg::Buffer(b) => m.touch(b.handle, index),
                KernelArg::Texture { handle, .. } => m.touch_texture(handle, index),
                KernelArg::Sampler => {}
            }
        }
        Ok(self.ctx.submission(index))
    }
}
