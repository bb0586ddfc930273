//! A JPEG whose data is whole but whose end-of-image marker is missing (libjpeg-turbo and
//! Pillow decode those) is decoded with a warning, into the pixels of the file with its marker;
//! one cut inside its scan is still refused (every cut is tried on the decoder in
//! `tests/jpeg_end.rs`).

use vramkit::ContextDesc;

use super::common::{random_bytes, try_gpu};
use super::{refused, run_ok};

#[test]
fn a_jpeg_without_its_end_marker_is_decoded_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (97, 61);
    let px = random_bytes((w * h * 3) as usize, 21);
    let mut whole = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut whole, 90)
        .encode(&px, w, h, image::ExtendedColorType::Rgb8)
        .expect("encode");
    assert_eq!(whole[whole.len() - 2..], [0xFF, 0xD9]);
    let no_end = &whole[..whole.len() - 2];
    let out = dir.path().join("out");
    let out_s = out.to_str().expect("utf-8");
    // Cut inside the scan: refused as cut short, whether or not a device opens.
    for cut in [5, 40] {
        let path = dir.path().join(format!("cut{cut}.jpg"));
        std::fs::write(&path, &no_end[..no_end.len() - cut]).expect("write");
        refused(
            &[path.to_str().expect("utf-8"), "--out", out_s],
            3,
            &["cut short"],
        );
    }
    if try_gpu("cli jpeg without EOI", ContextDesc::default()).is_none() {
        return;
    }
    let (a, b) = (dir.path().join("whole.jpg"), dir.path().join("no_end.jpg"));
    std::fs::write(&a, &whole).expect("write");
    std::fs::write(&b, no_end).expect("write");
    let stderr = run_ok(&[
        a.to_str().expect("utf-8"),
        b.to_str().expect("utf-8"),
        "--ops",
        "linear,srgb",
        "--out",
        out_s,
    ]);
    assert!(
        stderr.contains("no_end.jpg: the JPEG has no end-of-image marker"),
        "{stderr}"
    );
    let read = |name: &str| {
        image::open(out.join(name))
            .expect("an output")
            .to_rgba8()
            .into_raw()
    };
    assert_eq!(read("whole.png"), read("no_end.png"), "the same pixels");
}
