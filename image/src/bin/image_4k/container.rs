//! Whether a PNG or JPEG file is whole: its structure is walked to its end marker (PNG's IEND
//! chunk, JPEG's EOI marker) before the pixels are decoded. The decoders forgive a file cut
//! short (zune-jpeg, which the `image` crate runs in its lenient mode, fills the missing rows
//! with grey), so a truncated download would otherwise come out as a grey-bottomed image and
//! exit 0. A JPEG that ends inside a scan is told apart from one whose marker alone is missing
//! by decoding it (see the input module). The walk also finds an animated PNG's frame count,
//! since the decoder gives only its first image.

use std::io::{BufRead, ErrorKind, Read, Seek, SeekFrom};

use super::InputError;

/// What the chunks of a whole PNG say beside its pixels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PngChunks {
    /// The frames of an animated PNG (its `acTL` chunk's count); `None` for a still image.
    pub frames: Option<u32>,
    /// Whether the image the decoder gives (the `IDAT` data) is the animation's first frame:
    /// an `fcTL` chunk comes before it. Otherwise it is a still image shown where animation is
    /// not, and not one of the frames.
    pub first_is_frame: bool,
}

impl PngChunks {
    /// What the user should know when only one image of an animation is used.
    pub fn animation_warning(&self) -> Option<String> {
        let n = self.frames.filter(|&n| n > 1)?;
        let used = if self.first_is_frame {
            format!("only the first of its {n} frames was used")
        } else {
            format!(
                "only its still image was used, none of its {n} frames (the still image is what \
                 viewers without animation show)"
            )
        };
        Some(format!(
            "an animated PNG: {used}; to process every frame, export them as separate PNG files"
        ))
    }
}

/// Checks that the PNG in `r` (from its start) runs through its chunks to IEND, then rewinds;
/// says whether it is animated.
///
/// # Errors
/// What is missing, in words.
pub fn png_is_whole<R: Read + Seek>(r: &mut R) -> Result<PngChunks, String> {
    let total = r.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
    let mut at = 8u64; // the signature
    let mut chunks = PngChunks::default();
    let mut seen_idat = false;
    loop {
        if at + 8 > total {
            return Err(format!(
                "the file ends after {total} bytes, before the PNG's end chunk (IEND): it was \
                 cut short"
            ));
        }
        r.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
        let mut head = [0u8; 8];
        r.read_exact(&mut head).map_err(|e| e.to_string())?;
        let len = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        // Length, type, data, CRC.
        let end = at + 8 + len + 4;
        if end > total {
            return Err(format!(
                "the file ends after {total} bytes, inside its `{}` chunk, which needs {end}: it \
                 was cut short",
                String::from_utf8_lossy(&head[4..8])
            ));
        }
        match &head[4..8] {
            b"IEND" => break,
            b"IDAT" => seen_idat = true,
            b"fcTL" if !seen_idat => chunks.first_is_frame = true,
            // Its data starts with the number of frames.
            b"acTL" if len >= 4 => {
                let mut frames = [0u8; 4];
                r.read_exact(&mut frames).map_err(|e| e.to_string())?;
                chunks.frames = Some(u32::from_be_bytes(frames));
            }
            _ => {}
        }
        at = end;
    }
    r.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    Ok(chunks)
}

/// The next byte of `r`, `None` at the end.
fn byte<R: BufRead>(r: &mut R) -> Result<Option<u8>, String> {
    let b = match r.fill_buf() {
        Ok([]) => return Ok(None),
        Ok(buf) => buf[0],
        Err(e) if e.kind() == ErrorKind::Interrupted => return byte(r),
        Err(e) => return Err(e.to_string()),
    };
    r.consume(1);
    Ok(Some(b))
}

/// How a JPEG's structure ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JpegEnd {
    /// At its end-of-image marker.
    Marker,
    /// Inside the only scan of a one-scan (sequential) file, without the marker: whole data
    /// whose marker was left off (libjpeg-turbo and Pillow decode such files), or a file cut
    /// short; only decoding tells which.
    InScan,
}

/// Checks that the JPEG in `r` (from its start) runs through its segments and scans to the
/// end-of-image marker or ends inside a scan, then rewinds. Bytes after EOI (camera trailers)
/// are allowed, as are stray bytes between segments (decoders skip them too).
///
/// # Errors
/// [`InputError::Corrupt`] saying what is missing: the file ends between segments or inside
/// one; or what is damaged: a scan that holds a marker no encoder writes there (a reserved
/// one, or a second frame header), where the decoder would fill the rest of the frame with
/// whatever it made of the bytes, without a word. [`InputError::Unsupported`] for a coding
/// the decoder does not take (samples of other than 8 bits, lossless, hierarchical or
/// arithmetic coding), which it would misreport.
pub fn jpeg_is_whole<R: BufRead + Seek>(r: &mut R) -> Result<JpegEnd, InputError> {
    let short = |what: &str| {
        InputError::Corrupt(format!(
            "the file ends {what}, before the JPEG's end-of-image marker: it was cut short"
        ))
    };
    let io = |e: std::io::Error| InputError::Corrupt(e.to_string());
    // After SOI: segments, each FF <marker> [length, data]; after SOS, entropy-coded data up to
    // the next marker.
    let mut in_scan = false;
    let mut prev = 0u8;
    let mut seen_soi = false;
    let mut scans = 0u32;
    let mut frames = 0u32;
    loop {
        let Some(b) = byte(r).map_err(InputError::Corrupt)? else {
            // Only a file of one scan is told whole by its pixels: a progressive or
            // multi-scan file cut between scans decodes without complaint, its last scans
            // missing.
            if in_scan && scans == 1 {
                r.seek(SeekFrom::Start(0)).map_err(io)?;
                return Ok(JpegEnd::InScan);
            }
            return Err(short(if in_scan {
                "inside a scan"
            } else {
                "between segments"
            }));
        };
        if prev != 0xFF {
            prev = b;
            continue;
        }
        match b {
            // Stuffed zero in a scan, fill byte, or restart marker: still in the same place.
            0x00 | 0xFF | 0xD0..=0xD7 => {
                prev = if b == 0xFF { 0xFF } else { 0 };
                continue;
            }
            0xD8 => seen_soi = true,
            0xD9 if seen_soi => break,
            0x01 => {}
            // Reserved markers, and a frame header after a scan: damage in or after scan data
            // (encoders write neither).
            _ if scans > 0 && ((0x02..=0xBF).contains(&b) || (is_frame(b) && frames > 0)) => {
                let at = r.stream_position().map_err(io)?.saturating_sub(2);
                return Err(InputError::Corrupt(format!(
                    "the file is damaged at byte {at}: after its first scan it holds FF{b:02X}, a \
                     marker no encoder writes there, so the pixels from there on would be \
                     wrong; re-export or re-download the file"
                )));
            }
            _ => {
                let mut next = || {
                    byte(r)
                        .map_err(InputError::Corrupt)?
                        .ok_or_else(|| short("inside a segment's length"))
                };
                let len = u16::from_be_bytes([next()?, next()?]);
                if len < 2 {
                    return Err(InputError::Corrupt(format!(
                        "a segment (marker FF{b:02X}) has length {len}: the file is damaged"
                    )));
                }
                let mut skip = u64::from(len - 2);
                frames += u32::from(is_frame(b));
                if is_frame(b) && skip > 0 {
                    let precision = byte(r)
                        .map_err(InputError::Corrupt)?
                        .ok_or_else(|| short(&format!("inside a segment (marker FF{b:02X})")))?;
                    skip -= 1;
                    supported_frame(b, precision)?;
                }
                let copied =
                    std::io::copy(&mut r.by_ref().take(skip), &mut std::io::sink()).map_err(io)?;
                if copied < skip {
                    return Err(short(&format!("inside a segment (marker FF{b:02X})")));
                }
                in_scan = b == 0xDA;
                scans += u32::from(in_scan);
            }
        }
        prev = 0;
    }
    r.seek(SeekFrom::Start(0)).map_err(io)?;
    Ok(JpegEnd::Marker)
}

/// Whether marker `FFxx` starts a frame (SOF0–SOF15; C4, C8 and CC are tables).
fn is_frame(marker: u8) -> bool {
    matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC)
}

/// Refuses, by name, a frame the decoder does not take: only 8-bit baseline, extended
/// sequential and progressive Huffman-coded frames are decoded.
fn supported_frame(marker: u8, precision: u8) -> Result<(), InputError> {
    let coding = match marker {
        0xC0..=0xC2 => None,
        0xC3 => Some("lossless"),
        0xC5..=0xC7 => Some("hierarchical"),
        0xC9..=0xCB => Some("arithmetic-coded"),
        _ => Some("hierarchical arithmetic-coded"),
    };
    if let Some(coding) = coding {
        return Err(InputError::Unsupported(format!(
            "{coding} JPEGs (frame marker FF{marker:02X})"
        )));
    }
    if precision != 8 {
        return Err(InputError::Unsupported(format!(
            "JPEGs of {precision}-bit samples"
        )));
    }
    Ok(())
}
