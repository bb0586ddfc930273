//! What an input says about itself beside its pixels, carried into its output: the ICC colour
//! profile (JPEG APP2, PNG iCCP), EXIF (camera, date, GPS) and XMP. The frame is turned upright
//! as it is decoded, so the orientation both say is reset to 1 (upright), or viewers would turn
//! it again.
//! The encoders write the profile and EXIF; the tool's `embed` module adds XMP.

use image::metadata::Orientation;

/// An input's colour profile, EXIF and XMP, as the file holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    pub icc: Option<Vec<u8>>,
    pub exif: Option<Vec<u8>>,
    pub xmp: Option<Vec<u8>>,
}

impl Metadata {
    /// The metadata of a frame turned upright by its EXIF orientation (`turned`: it was not
    /// upright already): EXIF's orientation set to 1, and XMP's where the frame was turned (the
    /// decoder reads EXIF's alone, so an orientation only XMP gives stays for viewers to apply).
    pub fn upright(mut self, turned: bool) -> Self {
        if let Some(exif) = &mut self.exif {
            let _ = Orientation::remove_from_exif_chunk(exif);
        }
        if let (true, Some(xmp)) = (turned, &mut self.xmp) {
            upright_xmp(xmp);
        }
        self
    }
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
