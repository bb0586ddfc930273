//! What a photo says beside its pixels survives the tool: its colour profile (an Adobe RGB
//! JPEG must not come out read as sRGB), EXIF (camera, date) with the orientation reset to
//! upright once the frame is turned, and XMP, in PNG, JPEG and WebP outputs.

use image::metadata::Orientation;
use image::ImageDecoder;
use vramkit::ContextDesc;

use super::common::{random_bytes, try_gpu};
use super::{run, run_ok};

/// A little-endian TIFF blob (EXIF's layout) with IFD0 holding Make = `make` and
/// Orientation = `orientation`.
fn exif(make: &str, orientation: u16) -> Vec<u8> {
    let mut t = b"II*\0".to_vec();
    t.extend_from_slice(&8u32.to_le_bytes());
    t.extend_from_slice(&2u16.to_le_bytes());
    let text = format!("{make}\0");
    let data_at = 8 + 2 + 2 * 12 + 4;
    // Make: ASCII, its bytes past the IFD.
    t.extend_from_slice(&0x010Fu16.to_le_bytes());
    t.extend_from_slice(&2u16.to_le_bytes());
    t.extend_from_slice(&(text.len() as u32).to_le_bytes());
    t.extend_from_slice(&(data_at as u32).to_le_bytes());
    // Orientation: one SHORT, in the entry.
    t.extend_from_slice(&0x0112u16.to_le_bytes());
    t.extend_from_slice(&3u16.to_le_bytes());
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&orientation.to_le_bytes());
    t.extend_from_slice(&[0, 0]);
    t.extend_from_slice(&0u32.to_le_bytes());
    t.extend_from_slice(text.as_bytes());
    t
}

/// An XMP packet naming the orientation and a label to find again.
fn xmp(orientation: u8) -> Vec<u8> {
    format!(
        r#"<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" xmlns:xmp="http://ns.adobe.com/xap/1.0/" tiff:Orientation="{orientation}" xmp:Label="vramkit-label"/></rdf:RDF></x:xmpmeta>"#
    )
    .into_bytes()
}

/// A JPEG with `icc`, EXIF (orientation 6: turn 90° clockwise) and XMP (an APP1 segment put
/// in after the encoder's).
fn tagged_jpeg(w: u32, h: u32, icc: &[u8]) -> Vec<u8> {
    let px = random_bytes((w * h * 3) as usize, 31);
    let mut out = Vec::new();
    let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95);
    use image::ImageEncoder;
    enc.set_icc_profile(icc.to_vec()).expect("icc");
    enc.set_exif_metadata(exif("vramkit-camera", 6))
        .expect("exif");
    enc.write_image(&px, w, h, image::ExtendedColorType::Rgb8)
        .expect("encode");
    let header = b"http://ns.adobe.com/xap/1.0/\0";
    let packet = xmp(6);
    let mut seg = vec![0xFF, 0xE1];
    seg.extend_from_slice(&((2 + header.len() + packet.len()) as u16).to_be_bytes());
    seg.extend_from_slice(header);
    seg.extend_from_slice(&packet);
    out.splice(2..2, seg);
    out
}

/// What a decoder reads of a file: profile, EXIF, XMP and size.
struct ReadBack {
    icc: Option<Vec<u8>>,
    exif: Option<Vec<u8>>,
    xmp: Option<Vec<u8>>,
    size: (u32, u32),
}

/// Profile, EXIF and XMP of an encoded file, read by the image crate's decoders.
fn read_back(path: &std::path::Path) -> ReadBack {
    let mut d = image::ImageReader::open(path)
        .expect("open")
        .with_guessed_format()
        .expect("format")
        .into_decoder()
        .expect("decoder");
    ReadBack {
        icc: d.icc_profile().expect("icc"),
        exif: d.exif_metadata().expect("exif"),
        xmp: d.xmp_metadata().expect("xmp"),
        size: d.dimensions(),
    }
}

#[test]
fn profile_exif_and_xmp_reach_every_output_format() {
    if try_gpu("cli metadata", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let icc = moxcms::ColorProfile::new_adobe_rgb()
        .encode()
        .expect("an Adobe RGB profile");
    let input = dir.path().join("adobe.jpg");
    std::fs::write(&input, tagged_jpeg(40, 24, &icc)).expect("write");
    // The input, as a decoder sees it, holds what the outputs must.
    let ReadBack {
        icc: i_icc,
        exif: i_exif,
        xmp: i_xmp,
        ..
    } = read_back(&input);
    assert_eq!(i_icc.as_deref(), Some(&icc[..]));
    assert_eq!(
        Orientation::from_exif_chunk(&i_exif.expect("exif")),
        Some(Orientation::Rotate90)
    );
    assert!(i_xmp.is_some());
    for ext in ["png", "jpg", "webp"] {
        let out = dir.path().join(format!("out.{ext}"));
        let o = run(&[
            input.to_str().expect("utf-8"),
            "--ops",
            "linear,srgb",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("left out"), "{ext}: {stderr}");
        let ReadBack {
            icc: icc_out,
            exif: exif_out,
            xmp: xmp_out,
            size,
        } = read_back(&out);
        assert_eq!(size, (24, 40), "{ext}: turned upright");
        assert_eq!(icc_out.as_deref(), Some(&icc[..]), "{ext}: the profile");
        let exif_out = exif_out.unwrap_or_else(|| panic!("{ext}: no EXIF"));
        assert_eq!(
            Orientation::from_exif_chunk(&exif_out),
            Some(Orientation::NoTransforms),
            "{ext}: orientation reset"
        );
        assert!(
            exif_out.windows(14).any(|w| w == b"vramkit-camera"),
            "{ext}: the camera's name"
        );
        let xmp_out = String::from_utf8(xmp_out.unwrap_or_else(|| panic!("{ext}: no XMP")))
            .expect("utf-8 XMP");
        assert!(
            xmp_out.contains("vramkit-label") && xmp_out.contains(r#"tiff:Orientation="1""#),
            "{ext}: {xmp_out}"
        );
    }
}

/// An orientation none of the eight EXIF defines (0, 9 and up) turns nothing: the frame is
/// made as stored, with a warning, and its output says 1 (upright), not the value it had.
#[test]
fn an_invalid_orientation_is_taken_as_upright_and_written_as_one() {
    if try_gpu("cli invalid orientation", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for value in [0u16, 9, 300] {
        let input = dir.path().join(format!("o{value}.jpg"));
        let mut jpeg = Vec::new();
        let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 95);
        use image::ImageEncoder;
        enc.set_exif_metadata(exif("vramkit-camera", value))
            .expect("exif");
        enc.write_image(
            &random_bytes(40 * 24 * 3, 5),
            40,
            24,
            image::ExtendedColorType::Rgb8,
        )
        .expect("encode");
        std::fs::write(&input, jpeg).expect("write");
        let out = dir.path().join(format!("o{value}.png"));
        let stderr = run_ok(&[
            input.to_str().expect("utf-8"),
            "--ops",
            "linear,srgb",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert!(
            stderr.contains(&format!(
                "its EXIF orientation is {value}, not one of 1 to 8"
            )),
            "{value}: {stderr}"
        );
        let back = read_back(&out);
        assert_eq!(back.size, (40, 24), "{value}: not turned");
        let exif_out = back.exif.expect("EXIF");
        assert_eq!(
            Orientation::from_exif_chunk(&exif_out),
            Some(Orientation::NoTransforms),
            "{value}: written as 1"
        );
        assert!(exif_out.windows(14).any(|w| w == b"vramkit-camera"));
    }
}
