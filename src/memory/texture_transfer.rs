//! Uploads and readbacks of texture levels through the staging ring.
//!
//! Texels travel in rows padded to [`ROW_ALIGNMENT`] bytes (what copies between buffers and
//! textures take), as many rows per staging slot as fit; a level whose padded row is larger
//! than a slot goes in bands of columns. Rows are streamed, so a frame of any size passes
//! through a ring of a few small slots, and downloads are pipelined over the slots as buffer
//! readbacks are.

use super::staging::Staging;
use super::transfer::{pipelined_readback, Transfer};
use super::TextureHandle;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::texture::{TextureCopy, TextureDesc, ROW_ALIGNMENT};

/// The rectangles a level moves in, each fitting one slot: `(copy, bytes of one unpadded row
/// of the rectangle)`.
fn pieces(desc: &TextureDesc, mip: u32, slot: u64) -> Vec<TextureCopy> {
    let [w, h] = desc.level_size(mip);
    let texel = u64::from(desc.format.bytes_per_texel());
    let cols = if (u64::from(w) * texel).next_multiple_of(ROW_ALIGNMENT) <= slot {
        w
    } else {
        // `slot` is a multiple of the allocation unit (≥ 256), so whole padded rows of `cols`
        // texels fit.
        u32::try_from((slot / ROW_ALIGNMENT * ROW_ALIGNMENT / texel).max(1)).unwrap_or(w)
    };
    let mut out = Vec::new();
    for x in (0..w).step_by(cols as usize) {
        let cw = cols.min(w - x);
        let bytes_per_row = (u64::from(cw) * texel).next_multiple_of(ROW_ALIGNMENT);
        let rows = u32::try_from((slot / bytes_per_row).max(1)).unwrap_or(h);
        for y in (0..h).step_by(rows as usize) {
            out.push(TextureCopy {
                mip,
                origin: [x, y],
                size: [cw, rows.min(h - y)],
                bytes_per_row,
            });
        }
    }
    out
}

/// Where a piece's rows lie in a level's tightly packed texels: `(start, row stride, row
/// bytes)`.
fn packed(desc: &TextureDesc, c: &TextureCopy) -> (usize, usize, usize) {
    let texel = desc.format.bytes_per_texel() as usize;
    let [w, _] = desc.level_size(c.mip);
    let stride = w as usize * texel;
    let start = c.origin[1] as usize * stride + c.origin[0] as usize * texel;
    (start, stride, c.size[0] as usize * texel)
}

impl<B: Storage> Transfer<'_, B> {
    /// The description of a live texture and the bytes of level `mip`, checked against `len`.
    fn level(&self, h: TextureHandle, mip: u32, len: usize) -> Result<TextureDesc> {
        let m = self.mem.lock();
        let desc = m.texture(h)?.desc.clone();
        if mip >= desc.mip_levels {
            return Err(Error::InvalidParameter {
                name: "mip",
                value: mip.to_string(),
                reason: "the texture has fewer mip levels; levels count from 0",
            });
        }
        let want = desc.level_bytes(mip);
        if len as u64 != want {
            let [w, hh] = desc.level_size(mip);
            return Err(Error::ShapeMismatch {
                expected: format!(
                    "{want} bytes: level {mip} of `{}` is {w}×{hh} texels of {} bytes ({:?}), \
                     rows tightly packed",
                    desc.label,
                    desc.format.bytes_per_texel(),
                    desc.format
                ),
                actual: format!("{len} bytes"),
            });
        }
        Ok(desc)
    }

    /// Writes level `mip` of the texture from `data` (rows tightly packed).
    pub fn upload_texture(&mut self, h: TextureHandle, mip: u32, data: &[u8]) -> Result<()> {
        let desc = self.level(h, mip, data.len())?;
        let Staging {
            upload: ring,
            readback: spare,
        } = &mut *self.staging;
        let mut rows = Vec::new();
        for c in pieces(&desc, mip, ring.slot_size) {
            let (start, stride, row) = packed(&desc, &c);
            rows.clear();
            rows.resize(c.buffer_bytes() as usize, 0);
            for (r, dst) in rows.chunks_exact_mut(c.bytes_per_row as usize).enumerate() {
                let at = start + r * stride;
                dst[..row].copy_from_slice(&data[at..at + row]);
            }
            let s = ring.acquire(self.backend, self.mem, spare)?;
            let block = &ring.slots[s].block;
            // SAFETY: a piece's rows fit one slot (`pieces`); `acquire` waited for the slot's
            // last copy.
            unsafe { self.backend.write_host(block, 0, &rows)? };
            let index = {
                let mut m = self.mem.lock();
                let t = m.texture(h)?;
                // SAFETY: the rectangle lies inside the level (`pieces` tiles the level, which
                // `level` checked exists); the rows lie at the slot's start, a multiple of
                // every alignment, `bytes_per_row` apart (a multiple of ROW_ALIGNMENT, at
                // least the rectangle's row).
                let index = unsafe { self.backend.copy_to_texture(block, 0, &t.raw, c)? };
                m.touch_texture(h, index);
                index
            };
            ring.slots[s].in_flight = index;
            self.backend.submit()?;
        }
        Ok(())
    }

    /// Reads level `mip` of the texture into `out` (rows tightly packed), pipelined over the
    /// ring's slots.
    pub fn download_texture(&mut self, h: TextureHandle, mip: u32, out: &mut [u8]) -> Result<()> {
        let desc = self.level(h, mip, out.len())?;
        let backend = self.backend;
        let mem = self.mem;
        let Staging {
            readback: ring,
            upload: spare,
        } = &mut *self.staging;
        let mut rows = Vec::new();
        let pieces = pieces(&desc, mip, ring.slot_size);
        pipelined_readback(
            backend,
            mem,
            ring,
            spare,
            pieces,
            |slot, c| {
                let mut m = mem.lock();
                let t = m.texture(h)?;
                // SAFETY: as in `upload_texture`, the other way.
                let index = unsafe { backend.copy_from_texture(&t.raw, *c, slot, 0)? };
                m.touch_texture(h, index);
                Ok(index)
            },
            |slot, c| {
                rows.resize(c.buffer_bytes() as usize, 0);
                // SAFETY: the piece's rows fit the slot (`pieces`), and its copy has finished.
                unsafe { backend.read_host(slot, 0, &mut rows)? };
                let (start, stride, row) = packed(&desc, &c);
                for (r, src) in rows.chunks_exact(c.bytes_per_row as usize).enumerate() {
                    let at = start + r * stride;
                    out[at..at + row].copy_from_slice(&src[..row]);
                }
                Ok(())
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::texture::TextureFormat;

    /// Pieces tile every level exactly once and each fits the slot.
    #[test]
    fn pieces_tile_levels_within_a_slot() {
        for (w, h, f, slot) in [
            (3840, 2160, TextureFormat::Rgba32Float, 4 << 20),
            (5000, 3, TextureFormat::Rgba32Float, 4096),
            (37, 23, TextureFormat::R8Unorm, 256),
            (1, 1, TextureFormat::Rgba16Float, 256),
            (300, 200, TextureFormat::Rgba8Unorm, 1024),
        ] {
            let d = TextureDesc::new("t", w, h, f).mip_levels(3.min(32 - w.max(h).leading_zeros()));
            for mip in 0..d.mip_levels {
                let [lw, lh] = d.level_size(mip);
                let mut seen = vec![0u8; (lw * lh) as usize];
                for c in pieces(&d, mip, slot) {
                    assert!(c.buffer_bytes() <= slot, "{w}×{h} {f:?}: {c:?} > {slot}");
                    assert_eq!(c.bytes_per_row % ROW_ALIGNMENT, 0);
                    for y in c.origin[1]..c.origin[1] + c.size[1] {
                        for x in c.origin[0]..c.origin[0] + c.size[0] {
                            seen[(y * lw + x) as usize] += 1;
                        }
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{w}×{h} mip {mip}");
            }
        }
    }
}
