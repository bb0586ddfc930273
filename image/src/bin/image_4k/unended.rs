//! A JPEG that ends inside its last scan, without the end-of-image marker: whole data whose
//! marker was left off (libjpeg-turbo and Pillow decode those), or a file cut short. Only
//! decoding tells them apart.

use std::io::{Cursor, Read, Seek, SeekFrom};

use image::ImageFormat;

use super::{decode_pixels, Decoded, InputError, InputLimits};

/// A JPEG whose last scan has no end-of-image marker after it: decoded with the marker put
/// back, and again with bytes the scan cannot have used put in front of it. A scan whose data
/// is whole never reads past its end, so the two agree (and give the pixels of the file with
/// its marker); a scan cut short reads on into what follows (zeros, then those bytes), so they
/// differ, and the file is refused as cut short.
pub(super) fn decode_without_end<R: Read + Seek>(
    mut r: R,
    limits: &InputLimits,
) -> Result<Decoded, InputError> {
    const EOI: [u8; 2] = [0xFF, 0xD9];
    r.seek(SeekFrom::Start(0)).map_err(InputError::Unreadable)?;
    let mut data = Vec::new();
    r.take(limits.max_file_bytes())
        .read_to_end(&mut data)
        .map_err(InputError::Unreadable)?;
    // A last 0xFF is a data byte whose stuffed zero was cut off, or the first half of the
    // marker: the zero makes it a data byte either way (past a whole scan's end, it is not read).
    if data.last() == Some(&0xFF) {
        data.push(0);
    }
    let len = data.len();
    data.extend_from_slice(&EOI);
    let ended = decode_pixels(Cursor::new(&data[..]), ImageFormat::Jpeg, limits)?;
    data.truncate(len);
    data.extend_from_slice(&[0x55; 64]);
    data.extend_from_slice(&EOI);
    let padded = decode_pixels(Cursor::new(&data[..]), ImageFormat::Jpeg, limits)?;
    if ended.samples != padded.samples {
        return Err(InputError::Corrupt(
            "the file ends inside a scan, before the JPEG's end-of-image marker: it was cut short"
                .into(),
        ));
    }
    let end = "the JPEG has no end-of-image marker, but its data is whole: decoded as it is";
    Ok(Decoded {
        warning: Some(match ended.warning {
            Some(w) => format!("{end}; {w}"),
            None => end.into(),
        }),
        ..ended
    })
}
