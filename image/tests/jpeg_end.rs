//! A JPEG whose last scan lost its end-of-image marker: the input path decodes it exactly when
//! its data is whole (the pixels of the file with the marker, with a warning), and refuses it
//! as cut short otherwise, whatever the cut.

#[path = "../src/bin/image_4k/input.rs"]
#[allow(dead_code)]
mod input;

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Cursor;

use input::{decode, InputError, InputLimits, Samples};

fn jpeg(w: u32, h: u32, quality: u8, seed: u64) -> Vec<u8> {
    let px = common::random_bytes((w * h * 3) as usize, seed);
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode(&px, w, h, image::ExtendedColorType::Rgb8)
        .expect("encode");
    out
}

#[test]
fn whole_data_decodes_exactly_and_any_cut_is_refused() {
    for (w, h, q, seed) in [
        (97, 61, 90, 1),
        (64, 64, 100, 2),
        (17, 9, 50, 3),
        (333, 217, 75, 4),
    ] {
        let whole = jpeg(w, h, q, seed);
        let want = decode(Cursor::new(&whole[..]), &InputLimits::TOOL)
            .expect("the whole file decodes")
            .samples;
        assert!(matches!(want, Samples::Rgba8(_)));
        let data = &whole[..whole.len() - 2];
        let mut accepted = 0;
        let cuts = common::rounds(200) as usize;
        for cut in 0..cuts.min(data.len() / 2) {
            let bytes = &data[..data.len() - cut];
            match decode(Cursor::new(bytes), &InputLimits::TOOL) {
                Ok(d) => {
                    // Only data that is whole is accepted: the same pixels, and a warning.
                    assert!(
                        d.samples == want,
                        "{w}x{h}: cut {cut} decoded to other pixels"
                    );
                    assert!(d
                        .warning
                        .is_some_and(|m| m.contains("no end-of-image marker")));
                    accepted += 1;
                }
                Err(InputError::Corrupt(why)) => {
                    assert!(why.contains("cut short"), "{w}x{h}: cut {cut}: {why}");
                }
                Err(e) => panic!("{w}x{h}: cut {cut}: {e}"),
            }
        }
        // The file without its marker (cut 0) is whole; a stuffed zero may go too.
        assert!((1..=2).contains(&accepted), "{w}x{h}: {accepted} accepted");
        let d = decode(Cursor::new(data), &InputLimits::TOOL).expect("without the marker");
        assert!(d.samples == want && d.warning.is_some());
        // With the marker there is nothing to say.
        let d = decode(Cursor::new(&whole[..]), &InputLimits::TOOL).expect("whole");
        assert!(d.warning.is_none());
    }
}
