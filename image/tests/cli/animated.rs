//! An animated PNG (APNG) is made from one image, as its decoder gives: the tool says so on
//! stderr and in the JSON report, naming how many frames there were.

use std::io::Write;

use vramkit::ContextDesc;

use super::common::try_gpu;
use super::{png_chunk, png_start, run_ok};

/// The zlib data of a `w × h` 8-bit RGB image of one `colour` (each row unfiltered).
fn solid(w: u32, h: u32, colour: [u8; 3]) -> Vec<u8> {
    // Each row: its filter type (0, none), then its pixels.
    let row: Vec<u8> = std::iter::once(0)
        .chain(colour.iter().copied().cycle().take(3 * w as usize))
        .collect();
    let rows = row.repeat(h as usize);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&rows).expect("compress");
    z.finish().expect("compress")
}

/// A frame control chunk's data: sequence number `seq`, a whole `w × h` frame of 1/10 s.
fn fctl(seq: u32, w: u32, h: u32) -> Vec<u8> {
    let mut d = Vec::new();
    for v in [seq, w, h, 0, 0] {
        d.extend_from_slice(&v.to_be_bytes());
    }
    d.extend_from_slice(&1u16.to_be_bytes());
    d.extend_from_slice(&10u16.to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d
}

/// An APNG of `frames` (solid colours), each `w × h`. With `first_is_frame`, the image data
/// (IDAT) is the first frame; otherwise it is a still image (`still`) that is not one of them.
fn apng(w: u32, h: u32, still: [u8; 3], frames: &[[u8; 3]], first_is_frame: bool) -> Vec<u8> {
    let mut png = png_start(w, h);
    let mut actl = (frames.len() as u32).to_be_bytes().to_vec();
    actl.extend_from_slice(&0u32.to_be_bytes());
    png_chunk(&mut png, b"acTL", &actl);
    let mut seq = 0;
    let mut rest = frames;
    if first_is_frame {
        png_chunk(&mut png, b"fcTL", &fctl(seq, w, h));
        seq += 1;
        png_chunk(&mut png, b"IDAT", &solid(w, h, frames[0]));
        rest = &frames[1..];
    } else {
        png_chunk(&mut png, b"IDAT", &solid(w, h, still));
    }
    for &colour in rest {
        png_chunk(&mut png, b"fcTL", &fctl(seq, w, h));
        let mut fdat = (seq + 1).to_be_bytes().to_vec();
        fdat.extend_from_slice(&solid(w, h, colour));
        png_chunk(&mut png, b"fdAT", &fdat);
        seq += 2;
    }
    png_chunk(&mut png, b"IEND", &[]);
    png
}

#[test]
fn an_animated_png_is_made_from_its_first_frame_with_a_warning() {
    if try_gpu("cli animated png", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (red, green, blue, grey) = ([250, 10, 10], [10, 250, 10], [10, 10, 250], [99; 3]);
    let anim = dir.path().join("anim.png");
    std::fs::write(&anim, apng(24, 16, grey, &[red, green, blue], true)).expect("write");
    let still = dir.path().join("still.png");
    std::fs::write(&still, apng(24, 16, grey, &[green, blue], false)).expect("write");
    // The decoder reads them as PNGs: the first image is what it gives.
    let first = image::open(&anim).expect("an APNG decodes").to_rgb8();
    assert_eq!(first.get_pixel(3, 3).0, red);
    let out = dir.path().join("out");
    let report = dir.path().join("report.json");
    let stderr = run_ok(&[
        anim.to_str().expect("utf-8"),
        still.to_str().expect("utf-8"),
        "--ops",
        "linear,srgb",
        "--out",
        out.to_str().expect("utf-8"),
        "--json",
        report.to_str().expect("utf-8"),
    ]);
    let said_anim = "anim.png: an animated PNG: only the first of its 3 frames was used";
    let said_still = "still.png: an animated PNG: only its still image was used, none of its 2 \
                      frames";
    assert!(stderr.contains(said_anim), "{stderr}");
    assert!(stderr.contains(said_still), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    for (i, said) in [said_anim, said_still].into_iter().enumerate() {
        let warning = json["files"][i]["warning"].as_str().unwrap_or_default();
        assert!(warning.contains(said), "{i}: {warning}");
    }
    for (name, want) in [("anim.png", red), ("still.png", grey)] {
        let img = image::open(out.join(name)).expect("an output").to_rgb8();
        assert_eq!(img.dimensions(), (24, 16));
        let got = img.get_pixel(5, 7).0;
        for k in 0..3 {
            assert!(
                got[k].abs_diff(want[k]) <= 1,
                "{name}: {got:?}, want {want:?}"
            );
        }
    }
}
