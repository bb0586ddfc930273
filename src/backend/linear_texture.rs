//! Textures in linear memory, for backends without an image type of their own (the host, and
//! CUDA, where kernels address textures as pitched device memory): one block holding every mip
//! level, each level's rows padded to a multiple of [`ROW_ALIGNMENT`](crate::types::texture::ROW_ALIGNMENT), levels one after another. The layout is
//! the staging layout of copies, so a whole level moves in one copy.

use crate::types::texture::{TextureCopy, TextureDesc};

/// A texture as one block of linear memory (the host's and CUDA's textures).
#[derive(Debug)]
pub struct LinearTexture<Blk> {
    pub(crate) block: Blk,
    /// Per level: where its first row starts in the block, and its row pitch.
    levels: Vec<(u64, u64)>,
    width: Vec<u32>,
    texel: u64,
}

impl<Blk> LinearTexture<Blk> {
    /// Bytes a block for `desc` needs: [`TextureDesc::estimated_bytes`].
    pub(crate) fn bytes(desc: &TextureDesc) -> u64 {
        desc.estimated_bytes()
    }

    /// The block holding it: with the CUDA backend, its device address is the first texel
    /// of mip level 0, rows padded to a multiple of [`ROW_ALIGNMENT`](crate::types::texture::ROW_ALIGNMENT).
    pub fn block(&self) -> &Blk {
        &self.block
    }

    /// The texture `desc` describes, in `block` (at least [`bytes`](Self::bytes) long).
    pub(crate) fn new(block: Blk, desc: &TextureDesc) -> Self {
        let mut at = 0;
        let mut levels = Vec::with_capacity(desc.mip_levels as usize);
        let mut width = Vec::with_capacity(desc.mip_levels as usize);
        for m in 0..desc.mip_levels {
            let pitch = desc.padded_row(m);
            levels.push((at, pitch));
            let [w, h] = desc.level_size(m);
            width.push(w);
            at += pitch * u64::from(h);
        }
        Self {
            block,
            levels,
            width,
            texel: u64::from(desc.format.bytes_per_texel()),
        }
    }

    /// The byte runs a copy of `copy` moves: `(offset in the block, offset from the buffer's
    /// first row, length)`. A rectangle of whole rows laid out as the level is one run.
    pub(crate) fn runs(&self, copy: TextureCopy) -> Vec<(u64, u64, u64)> {
        let m = copy.mip as usize;
        let (Some(&(start, pitch)), Some(&width)) = (self.levels.get(m), self.width.get(m)) else {
            return Vec::new();
        };
        let [x, y] = copy.origin.map(u64::from);
        let [w, h] = copy.size.map(u64::from);
        let first = start + y * pitch + x * self.texel;
        if x == 0 && copy.size[0] == width && copy.bytes_per_row == pitch {
            return vec![(first, 0, h * pitch)];
        }
        (0..h)
            .map(|r| (first + r * pitch, r * copy.bytes_per_row, w * self.texel))
            .collect()
    }
}
