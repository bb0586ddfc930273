//! Alpha meeting JPEG, which has none: transparent pixels are composited over `--background`
//! (white, with a warning, when it is not given), never written as the colour hidden under them.

use vramkit::ContextDesc;

use super::common::try_gpu;
use super::{refused, run};

/// A 64×64 PNG: the left half transparent over a hidden red, the right half opaque blue.
fn half_transparent(path: &std::path::Path) {
    let mut px = Vec::with_capacity(64 * 64 * 4);
    for _y in 0..64 {
        for x in 0..64 {
            px.extend_from_slice(if x < 32 {
                &[255, 0, 0, 0]
            } else {
                &[0, 0, 255, 255]
            });
        }
    }
    image::save_buffer(path, &px, 64, 64, image::ExtendedColorType::Rgba8).expect("write png");
}

/// The colour at (x, 32) of a JPEG, each channel within JPEG's error of `want`.
fn assert_near(img: &image::RgbImage, x: u32, want: [u8; 3], what: &str) {
    let got = img.get_pixel(x, 32).0;
    for k in 0..3 {
        assert!(
            got[k].abs_diff(want[k]) <= 6,
            "{what}: {got:?} at x = {x}, want {want:?}"
        );
    }
}

#[test]
fn transparent_pixels_meet_the_background_in_jpeg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("logo.png");
    half_transparent(&input);
    let input_s = input.to_str().expect("utf-8");
    let out = dir.path().join("out.jpg");
    let out_s = out.to_str().expect("utf-8");
    refused(
        &[input_s, "--out", out_s, "--background", "#12345"],
        2,
        &["#12345", "#RRGGBB"],
    );
    refused(
        &[input_s, "--out", out_s, "--background", "mauve"],
        2,
        &[
            "`mauve`", "#RRGGBB", "#RGB", "white", "grey", "red", "green", "blue",
        ],
    );
    if try_gpu("cli background", ContextDesc::default()).is_none() {
        return;
    }
    for (background, want, warned) in [
        (None, [255, 255, 255], true),
        (Some("#00ff00"), [0, 255, 0], false),
        (Some("black"), [0, 0, 0], false),
        (Some("Lime"), [0, 255, 0], false),
        (Some("NAVY"), [0, 0, 128], false),
    ] {
        let report = dir.path().join("report.json");
        let mut args = vec![
            input_s,
            "--ops",
            "linear,srgb",
            "--quality",
            "100",
            "--out",
            out_s,
            "--force",
            "--json",
            report.to_str().expect("utf-8"),
        ];
        if let Some(b) = background {
            args.extend(["--background", b]);
        }
        let o = run(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        assert_eq!(stderr.contains("composited over"), warned, "{stderr}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
        assert_eq!(json["files"][0]["warning"].is_string(), warned);
        let img = image::open(&out).expect("a JPEG").to_rgb8();
        assert_near(&img, 8, want, "transparent half");
        assert_near(&img, 56, [0, 0, 255], "opaque half");
    }
}
