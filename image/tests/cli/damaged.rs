//! Inputs that are damaged, cut short or not images at all: each is an input error (exit code
//! 3) that names the file and says what is wrong with it in words, never a panic or a decoder's
//! debug text.

use std::path::PathBuf;

use super::{png_header_only, refused, write_png};

#[test]
fn bad_images_are_input_errors_not_panics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8");
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        p.to_str().expect("utf-8").to_owned()
    };
    let good = dir.path().join("good.png");
    write_png(&good, 40, 30, true, 7);
    let png = std::fs::read(&good).expect("read");
    let truncated = file("truncated.png", &png[..png.len() / 2]);
    refused(
        &[&truncated, "--out", out],
        3,
        &["truncated.png", "damaged or truncated"],
    );
    let empty = file("empty.png", b"");
    refused(
        &[&empty, "--out", out],
        3,
        &["empty.png", "the file is empty"],
    );
    let huge = file("huge.png", &png_header_only(100_000, 100_000));
    refused(
        &[&huge, "--out", out],
        3,
        &["huge.png", "100000x100000", "65536"],
    );
    let many = file("many.png", &png_header_only(40_000, 40_000));
    refused(
        &[&many, "--out", out],
        3,
        &["many.png", "40000x40000", "1073741824"],
    );
    let zero = file("zero.png", &png_header_only(0, 7));
    refused(&[&zero, "--out", out], 3, &["zero.png"]);
    let gif = file("anim.png", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;");
    refused(&[&gif, "--out", out], 3, &["anim.png", "Gif"]);
    let jpeg = {
        let mut v = Vec::new();
        let img =
            image::RgbImage::from_fn(32, 16, |x, y| image::Rgb([x as u8 * 8, y as u8 * 16, 0]));
        img.write_to(&mut std::io::Cursor::new(&mut v), image::ImageFormat::Jpeg)
            .expect("encode jpeg");
        v
    };
    let cut = file("cut.jpg", &jpeg[..20]);
    refused(&[&cut, "--out", out], 3, &["cut.jpg"]);
    // zune-jpeg 0.5.15's AVX2 IDCT panics on this damaged JPEG (found by fuzzing): the tool
    // used to crash with exit code 101. As found it is also cut short, which is now seen
    // before decoding; with its end-of-image marker it reaches the decoder.
    let mut zune = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus/image_input/crash-zune-jpeg-avx2-idct.jpg"),
    )
    .expect("corpus file");
    zune.extend_from_slice(&[0xFF, 0xD9]);
    let zune = file("zune.jpg", &zune);
    refused(
        &[&zune, "--out", out],
        3,
        &["zune.jpg", "damaged", "decoder failed"],
    );
    let empty_dir = dir.path().join("nothing");
    std::fs::create_dir(&empty_dir).expect("mkdir");
    refused(
        &[empty_dir.to_str().expect("utf-8"), "--out", out],
        3,
        &["holds no"],
    );
    refused(
        &["/nonexistent/frame.png", "--out", out],
        3,
        &["/nonexistent/frame.png", "cannot read"],
    );
}

/// Where the chunk of `kind` starts in `png` (its length field).
fn chunk_at(png: &[u8], kind: &[u8; 4]) -> usize {
    let mut at = 8;
    while &png[at + 4..at + 8] != kind {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes")) as usize;
        at += 12 + len;
    }
    at
}

/// A chunk whose checksum does not match its data (a bit flipped on a disk or in a download)
/// is named by its four letters, not by the decoder's debug form.
#[test]
fn a_checksum_mismatch_names_the_damaged_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let good = dir.path().join("good.png");
    write_png(&good, 40, 30, false, 9);
    let mut png = std::fs::read(&good).expect("read");
    let idat = chunk_at(&png, b"IDAT");
    let len = u32::from_be_bytes(png[idat..idat + 4].try_into().expect("4 bytes")) as usize;
    // The first byte of its checksum, after its length, type and data.
    png[idat + 8 + len] ^= 0x40;
    let bad = dir.path().join("bad_crc.png");
    std::fs::write(&bad, &png).expect("write");
    let o = super::run(&[
        bad.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    for needle in [
        "bad_crc.png",
        "damaged",
        "`IDAT` chunk",
        "checksum",
        "does not match",
        "re-export or re-download it",
    ] {
        assert!(stderr.contains(needle), "{needle:?}: {stderr}");
    }
    assert!(!stderr.contains("ChunkType"), "{stderr}");
    assert!(!stderr.contains("critical:"), "{stderr}");
}
