//! What an input says about itself beside its pixels, carried into its output: the ICC colour
//! profile (JPEG APP2, PNG iCCP), EXIF (camera, date, GPS) and XMP. The frame is turned upright
//! as it is decoded, so the orientation both say is reset to 1 (upright), or viewers would turn
//! it again.
//! The encoders write the profile and EXIF; the tool's `embed` module adds XMP.

/// An input's colour profile, EXIF and XMP, as the file holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    pub icc: Option<Vec<u8>>,
    pub exif: Option<Vec<u8>>,
    pub xmp: Option<Vec<u8>>,
}

impl Metadata {
    /// The metadata of a frame turned upright by its EXIF orientation (`turned`: it was not
    /// upright already): EXIF's orientation set to 1, whatever it was (a value outside 1 to 8
    /// turns nothing, so such a frame is upright as stored), and XMP's where the frame was
    /// turned (the decoder reads EXIF's alone, so an orientation only XMP gives stays for
    /// viewers to apply).
    pub fn upright(mut self, turned: bool) -> Self {
        if let Some(exif) = &mut self.exif {
            if let Some(entry) = orientation_entry(exif) {
                let one = if entry.big_endian {
                    1u16.to_be_bytes()
                } else {
                    1u16.to_le_bytes()
                };
                exif[entry.at..entry.at + 2].copy_from_slice(&one);
            }
        }
        if let (true, Some(xmp)) = (turned, &mut self.xmp) {
            upright_xmp(xmp);
        }
        self
    }

    /// EXIF's orientation where it is none of the eight EXIF defines (1 to 8): the decoder
    /// takes such a value for 1 (no turn).
    pub fn invalid_orientation(&self) -> Option<u16> {
        let entry = orientation_entry(self.exif.as_deref()?)?;
        (!(1..=8).contains(&entry.value)).then_some(entry.value)
    }
}

/// EXIF's orientation tag: its value, and where in the EXIF blob its two bytes are.
struct OrientationEntry {
    value: u16,
    at: usize,
    big_endian: bool,
}

/// The orientation of an EXIF blob (TIFF layout: byte order, 42, the offset of IFD0), where
/// IFD0 holds it as one SHORT, as the decoders read it.
fn orientation_entry(exif: &[u8]) -> Option<OrientationEntry> {
    let big_endian = match exif.get(..4)? {
        [0x49, 0x49, 42, 0] => false,
        [0x4D, 0x4D, 0, 42] => true,
        _ => return None,
    };
    let bytes = |at: usize, n: usize| exif.get(at..at.checked_add(n)?);
    let u16_at = |at: usize| {
        let b: [u8; 2] = bytes(at, 2)?.try_into().ok()?;
        Some(if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_at = |at: usize| {
        let b: [u8; 4] = bytes(at, 4)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let ifd = usize::try_from(u32_at(4)?).ok()?;
    // Each entry: tag, type, count, value; an orientation is type 3 (SHORT), count 1.
    for i in 0..usize::from(u16_at(ifd)?) {
        let entry = ifd.checked_add(2 + 12 * i)?;
        if u16_at(entry)? == 0x0112 && u16_at(entry + 2)? == 3 && u32_at(entry + 4)? == 1 {
            let at = entry + 8;
            return Some(OrientationEntry {
                value: u16_at(at)?,
                at,
                big_endian,
            });
        }
    }
    None
}

/// Sets every `tiff:Orientation` of an XMP packet (attribute `="N"` or element `>N<`) to 1.
fn upright_xmp(xmp: &mut [u8]) {
    const KEY: &[u8] = b"tiff:Orientation";
    let mut at = 0;
    while let Some(found) = find(&xmp[at..], KEY) {
        let mut i = at + found + KEY.len();
        // `="6"`, `='6'` or `>6<`, with spaces allowed around `=`.
        while i < xmp.len() && matches!(xmp[i], b' ' | b'=' | b'"' | b'\'' | b'>') {
            i += 1;
        }
        if i < xmp.len() && (b'1'..=b'8').contains(&xmp[i]) {
            let next = xmp.get(i + 1).copied();
            if !next.is_some_and(|c| c.is_ascii_digit()) {
                xmp[i] = b'1';
            }
        }
        at = i.max(at + found + 1);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TIFF blob whose IFD0 holds an orientation (one SHORT) after another entry.
    fn exif(big_endian: bool, orientation: u16) -> Vec<u8> {
        let u16b = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u32b = |v: u32| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut t = if big_endian { b"MM\0*" } else { b"II*\0" }.to_vec();
        t.extend_from_slice(&u32b(8));
        t.extend_from_slice(&u16b(2));
        for (tag, value) in [(0x0100u16, 7u16), (0x0112, orientation)] {
            t.extend_from_slice(&u16b(tag));
            t.extend_from_slice(&u16b(3));
            t.extend_from_slice(&u32b(1));
            t.extend_from_slice(&u16b(value));
            t.extend_from_slice(&[0, 0]);
        }
        t.extend_from_slice(&u32b(0));
        t
    }

    #[test]
    fn an_orientation_outside_one_to_eight_is_invalid_and_written_as_one() {
        for big_endian in [false, true] {
            for (value, invalid) in [(0, true), (9, true), (300, true), (1, false), (6, false)] {
                let meta = Metadata {
                    exif: Some(exif(big_endian, value)),
                    ..Metadata::default()
                };
                let want = invalid.then_some(value);
                assert_eq!(meta.invalid_orientation(), want, "{value}");
                let upright = meta.upright(false);
                let exif_out = upright.exif.as_deref().expect("EXIF kept");
                assert_eq!(exif_out, exif(big_endian, 1), "{value}, big: {big_endian}");
                assert_eq!(upright.invalid_orientation(), None);
            }
        }
        let none = Metadata {
            exif: Some(b"II*\0\xff\xff\xff\xff".to_vec()),
            ..Metadata::default()
        };
        assert_eq!(none.invalid_orientation(), None, "IFD0 past the end");
        assert_eq!(none.clone().upright(true), none);
    }

    #[test]
    fn xmp_orientation_is_reset_in_both_spellings() {
        let mut a = br#"<x tiff:Orientation="6" tiff:Orientation = '8'/><tiff:Orientation>3</tiff:Orientation><tiff:OrientationX>12</tiff:OrientationX>"#.to_vec();
        upright_xmp(&mut a);
        assert_eq!(
            String::from_utf8(a).expect("utf-8"),
            r#"<x tiff:Orientation="1" tiff:Orientation = '1'/><tiff:Orientation>1</tiff:Orientation><tiff:OrientationX>12</tiff:OrientationX>"#
        );
    }
}
