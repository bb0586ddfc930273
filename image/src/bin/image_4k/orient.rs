//! EXIF orientation: the eight ways a camera says its pixels are stored, applied to a decoded
//! frame so that what the pipeline sees is upright. The decoders read the tag (JPEG's APP1,
//! PNG's eXIf chunk); this file moves the pixels.

use image::metadata::Orientation;

/// Where the pixel at `(x, y)` of the upright frame is in the stored `w × h` frame.
fn source(o: Orientation, [w, h]: [u32; 2], x: u32, y: u32) -> (u32, u32) {
    match o {
        Orientation::NoTransforms => (x, y),
        Orientation::FlipHorizontal => (w - 1 - x, y),
        Orientation::Rotate180 => (w - 1 - x, h - 1 - y),
        Orientation::FlipVertical => (x, h - 1 - y),
        // The stored frame turned a quarter clockwise: out(x, y) = in(y, h-1-x).
        Orientation::Rotate90 => (y, h - 1 - x),
        Orientation::Rotate270 => (w - 1 - y, x),
        // A quarter clockwise, then mirrored: the transpose.
        Orientation::Rotate90FlipH => (y, x),
        Orientation::Rotate270FlipH => (w - 1 - y, h - 1 - x),
    }
}

/// The size of the upright frame.
pub fn upright_size(o: Orientation, [w, h]: [u32; 2]) -> [u32; 2] {
    match o {
        Orientation::Rotate90
        | Orientation::Rotate270
        | Orientation::Rotate90FlipH
        | Orientation::Rotate270FlipH => [h, w],
        _ => [w, h],
    }
}

/// The upright frame of `px` (`w × h` pixels of 4 samples), and its size. The result is
/// allocated fallibly: `None` when the host has no room for a second frame.
pub fn apply<T: Copy + Default>(
    o: Orientation,
    size: [u32; 2],
    px: Vec<T>,
) -> Option<(Vec<T>, [u32; 2])> {
    if o == Orientation::NoTransforms {
        return Some((px, size));
    }
    let [ow, oh] = upright_size(o, size);
    let stride = size[0] as usize;
    let mut out = Vec::new();
    out.try_reserve_exact(px.len()).ok()?;
    for y in 0..oh {
        for x in 0..ow {
            let (sx, sy) = source(o, size, x, y);
            let at = (sy as usize * stride + sx as usize) * 4;
            out.extend_from_slice(&px[at..at + 4]);
        }
    }
    Some((out, [ow, oh]))
}
