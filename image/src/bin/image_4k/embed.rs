//! XMP into encoded files (the encoders write the colour profile and EXIF, not XMP): a JPEG
//! APP1 segment after the others, a PNG `iTXt` chunk (`XML:com.adobe.xmp`) before `IDAT`, a
//! WebP `XMP ` chunk (with the extended header's XMP flag).

/// The most XMP bytes one JPEG APP1 segment holds (beside its 29-byte namespace header);
/// longer packets need the extended XMP scheme, which is not written.
const JPEG_XMP_MAX: usize = 65_533 - 29;

/// Adds `xmp` to an encoded JPEG: an APP1 segment after the leading APPn segments. `Err` says
/// why it was not added (too large for one segment, or bytes that are not a JPEG).
pub fn jpeg_with_xmp(jpeg: &mut Vec<u8>, xmp: &[u8]) -> Result<(), String> {
    if xmp.len() > JPEG_XMP_MAX {
        return Err(format!(
            "its XMP ({} bytes) is larger than one JPEG segment holds ({JPEG_XMP_MAX}); it was \
             left out",
            xmp.len()
        ));
    }
    if jpeg.get(..2) != Some(&[0xFF, 0xD8]) {
        return Err("the encoder's output is not a JPEG: XMP left out".into());
    }
    // After SOI and any APPn segments.
    let mut at = 2;
    while jpeg.get(at) == Some(&0xFF) && jpeg.get(at + 1).is_some_and(|m| (0xE0..=0xEF).contains(m))
    {
        let len = u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize;
        at += 2 + len;
    }
    let header = b"http://ns.adobe.com/xap/1.0/\0";
    let len = (2 + header.len() + xmp.len()) as u16;
    let mut seg = Vec::with_capacity(2 + len as usize);
    seg.extend_from_slice(&[0xFF, 0xE1]);
    seg.extend_from_slice(&len.to_be_bytes());
    seg.extend_from_slice(header);
    seg.extend_from_slice(xmp);
    jpeg.splice(at..at, seg);
    Ok(())
}

/// Adds `xmp` to an encoded PNG: an uncompressed `iTXt` chunk with the keyword XMP readers
/// look for, before the first `IDAT`.
pub fn png_with_xmp(png: &mut Vec<u8>, xmp: &[u8]) -> Result<(), String> {
    let mut at = 8;
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]) as usize;
        if &png[at + 4..at + 8] == b"IDAT" {
            let mut data = b"XML:com.adobe.xmp\0\0\0\0\0".to_vec();
            data.extend_from_slice(xmp);
            png.splice(at..at, chunk(b"iTXt", &data));
            return Ok(());
        }
        at += 12 + len;
    }
    Err("the encoder's output has no IDAT chunk: XMP left out".into())
}

/// A PNG chunk: length, type, data, CRC of type and data.
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(12 + data.len());
    c.extend_from_slice(&(data.len() as u32).to_be_bytes());
    c.extend_from_slice(kind);
    c.extend_from_slice(data);
    let crc = crc32(&c[4..]);
    c.extend_from_slice(&crc.to_be_bytes());
    c
}

/// CRC-32 (IEEE), as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Adds `xmp` to an encoded WebP (`size`, with alpha or not): an `XMP ` chunk at the end, and
/// the extended header (`VP8X`) with its XMP flag, made if the encoder wrote none.
pub fn webp_with_xmp(
    webp: &mut Vec<u8>,
    xmp: &[u8],
    size: [u32; 2],
    alpha: bool,
) -> Result<(), String> {
    if webp.len() < 20 || &webp[..4] != b"RIFF" || &webp[8..12] != b"WEBP" {
        return Err("the encoder's output is not a WebP file: XMP left out".into());
    }
    const XMP_FLAG: u8 = 0x04;
    const ALPHA_FLAG: u8 = 0x10;
    if webp.len() >= 30 && &webp[12..16] == b"VP8X" {
        webp[20] |= XMP_FLAG;
    } else {
        let mut vp8x = Vec::with_capacity(18);
        vp8x.extend_from_slice(b"VP8X");
        vp8x.extend_from_slice(&10u32.to_le_bytes());
        vp8x.push(XMP_FLAG | if alpha { ALPHA_FLAG } else { 0 });
        vp8x.extend_from_slice(&[0; 3]);
        vp8x.extend_from_slice(&(size[0] - 1).to_le_bytes()[..3]);
        vp8x.extend_from_slice(&(size[1] - 1).to_le_bytes()[..3]);
        webp.splice(12..12, vp8x);
    }
    webp.extend_from_slice(b"XMP ");
    webp.extend_from_slice(&(xmp.len() as u32).to_le_bytes());
    webp.extend_from_slice(xmp);
    if xmp.len() % 2 == 1 {
        webp.push(0);
    }
    let riff = (webp.len() - 8) as u32;
    webp[4..8].copy_from_slice(&riff.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a CRC from the PNG specification's sample: the IEND chunk's.
    #[test]
    fn crc_matches_png() {
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }
}
