//! JPEG codings the decoder does not take (lossless, hierarchical, arithmetic, samples of other
//! than 8 bits) are refused by name from the frame header, instead of being misreported as
//! damaged; damaged scan data says where; and an empty file says it is empty.

#[path = "../src/bin/image_4k/input.rs"]
#[allow(dead_code)]
mod input;

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Cursor;

use input::{decode, InputError, InputLimits};

/// A baseline JPEG of random pixels, and the offset of its frame marker's second byte.
fn baseline() -> (Vec<u8>, usize) {
    let (w, h) = (40, 24);
    let px = common::random_bytes(w * h * 3, 7);
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
        .encode(&px, w as u32, h as u32, image::ExtendedColorType::Rgb8)
        .expect("encode");
    let at = out
        .windows(2)
        .position(|m| m == [0xFF, 0xC0])
        .expect("a baseline frame marker")
        + 1;
    (out, at)
}

#[test]
fn codings_the_decoder_lacks_are_refused_by_name() {
    let (good, at) = baseline();
    assert!(decode(Cursor::new(&good[..]), &InputLimits::TOOL).is_ok());
    for (marker, name) in [
        (0xC3, "lossless"),
        (0xC5, "hierarchical"),
        (0xC9, "arithmetic-coded"),
        (0xCA, "arithmetic-coded"),
        (0xCF, "hierarchical arithmetic-coded"),
    ] {
        let mut bytes = good.clone();
        bytes[at] = marker;
        match decode(Cursor::new(&bytes[..]), &InputLimits::TOOL) {
            Err(InputError::Unsupported(what)) => {
                assert!(
                    what.starts_with(name) && what.contains(&format!("FF{marker:02X}")),
                    "{what}"
                );
            }
            Err(e) => panic!("marker FF{marker:02X}: {e}"),
            Ok(_) => panic!("marker FF{marker:02X}: decoded"),
        }
    }
    // The frame header's first byte is the sample precision (after the length).
    let mut twelve = good.clone();
    twelve[at + 3] = 12;
    match decode(Cursor::new(&twelve[..]), &InputLimits::TOOL) {
        Err(InputError::Unsupported(what)) => assert!(what.contains("12-bit"), "{what}"),
        Err(e) => panic!("12-bit: {e}"),
        Ok(_) => panic!("12-bit: decoded"),
    }
    // Extended sequential 8-bit (SOF1) is baseline's superset: decoded, the same pixels.
    let mut sof1 = good.clone();
    sof1[at] = 0xC1;
    let want = decode(Cursor::new(&good[..]), &InputLimits::TOOL).map(|d| d.samples);
    let got = decode(Cursor::new(&sof1[..]), &InputLimits::TOOL).map(|d| d.samples);
    assert!(
        matches!((&got, &want), (Ok(a), Ok(b)) if a == b),
        "SOF1 decodes as baseline"
    );
}

/// Damage inside the scan data (bytes overwritten with a marker no encoder writes there, as a
/// bad sector or a broken copy leaves them) is an error that says where, not a frame decoded
/// from garbage with exit 0.
#[test]
fn damaged_scan_data_is_an_error_that_says_where() {
    let (good, _) = baseline();
    let sos = good
        .windows(2)
        .position(|m| m == [0xFF, 0xDA])
        .expect("a scan");
    let eoi = good.len() - 2;
    let mid = sos + (eoi - sos) / 2;
    for (marker, what) in [(0x47, "a reserved marker"), (0xC0, "a second frame header")] {
        let mut bad = good.clone();
        bad[mid] = 0xFF;
        bad[mid + 1] = marker;
        match decode(Cursor::new(&bad[..]), &InputLimits::TOOL) {
            Err(InputError::Corrupt(why)) => assert!(
                why.contains("damaged")
                    && why.contains(&format!(
                        "byte {mid}: after its first scan it holds FF{marker:02X}, a marker no \
                         encoder writes there"
                    )),
                "{what}: {why}"
            ),
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: decoded from damaged scan data"),
        }
    }
    // The markers a scan may hold stay accepted: restart markers, and the file decodes as
    // before.
    assert!(decode(Cursor::new(&good[..]), &InputLimits::TOOL).is_ok());
}

#[test]
fn an_empty_file_says_so() {
    match decode(Cursor::new(&[][..]), &InputLimits::TOOL) {
        Err(InputError::Corrupt(why)) => assert!(why.contains("empty"), "{why}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("an empty file decoded"),
    }
}
