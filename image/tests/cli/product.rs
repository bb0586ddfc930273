//! The 4K tool as a product: files cut short, EXIF orientation, outputs that never
//! destroy data, runs that go on past a bad file, grey inputs, output formats, the JSON report
//! and limits that name their flag. One regression test per defect, on generated files, each
//! checked against a reference made without the tool.

use std::path::{Path, PathBuf};

use image::metadata::Orientation;
use image::{DynamicImage, ExtendedColorType, ImageEncoder};
use vramkit::backend::Backend;
use vramkit::{Context, ContextDesc};
use vramkit_image::{parse_chain, Pipeline};

use super::common::{random_bytes, try_gpu};
use super::{png_header_only, refused, run, write_png};

/// What the library makes of `rgba` (`size`) with `ops`: the reference for the tool's pixels.
fn library<B: Backend>(ctx: &Context<B>, ops: &str, size: [u32; 2], rgba: &[u8]) -> Vec<u8> {
    let p = Pipeline::new(parse_chain(ops).expect("chain"), size).expect("pipeline");
    p.run(ctx, rgba).expect("library run").0
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// A noisy RGB JPEG of `w × h`, its bytes.
fn jpeg_bytes(w: u32, h: u32, seed: u64) -> Vec<u8> {
    let px = random_bytes((w * h * 3) as usize, seed);
    let mut v = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut v, 90)
        .write_image(&px, w, h, ExtendedColorType::Rgb8)
        .expect("encode jpeg");
    v
}

/// A TIFF-structured EXIF block (big-endian) holding only the orientation tag.
fn exif_orientation(o: u8) -> Vec<u8> {
    let mut v = b"MM\0\x2a".to_vec();
    v.extend_from_slice(&8u32.to_be_bytes()); // first IFD
    v.extend_from_slice(&1u16.to_be_bytes()); // one entry
    v.extend_from_slice(&0x0112u16.to_be_bytes()); // Orientation
    v.extend_from_slice(&3u16.to_be_bytes()); // SHORT
    v.extend_from_slice(&1u32.to_be_bytes()); // count
    v.extend_from_slice(&[0, o, 0, 0]); // value, padded
    v.extend_from_slice(&0u32.to_be_bytes()); // no next IFD
    v
}

/// The decoded pixels of a file, as stored (no orientation applied), RGBA8.
fn stored(path: &Path) -> DynamicImage {
    DynamicImage::ImageRgba8(image::open(path).expect("decodes").to_rgba8())
}

fn outputs_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn files_cut_short_are_input_errors_not_grey_rows() {
    // Input errors, whether or not a device opens: no GPU needed.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let jpeg = jpeg_bytes(64, 48, 11);
    let png = {
        let p = dir.path().join("whole.png");
        write_png(&p, 64, 48, true, 12);
        std::fs::read(&p).expect("read")
    };
    // The whole files decode (the cuts below are what fails).
    image::load_from_memory(&jpeg).expect("whole jpeg");
    for (name, bytes) in [
        ("half.jpg", &jpeg[..jpeg.len() / 2]),
        // The marker and the scan's last bytes missing (the marker alone missing is decoded
        // with a warning: see the cli tests' jpeg_end).
        ("no_eoi.jpg", &jpeg[..jpeg.len() - 12]),
        ("most.png", &png[..png.len() * 9 / 10]),
        // Every pixel there, the end chunk missing.
        ("no_iend.png", &png[..png.len() - 12]),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        refused(&[s(&p), "--out", s(&out)], 3, &[name, "cut short"]);
    }
    assert!(outputs_in(&out).is_empty(), "{:?}", outputs_in(&out));
}

#[test]
fn exif_orientation_is_applied_to_every_orientation() {
    let Some(ctx) = try_gpu("cli orientation", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    let (w, h) = (7u32, 5u32);
    for o in 1..=8u8 {
        let exif = exif_orientation(o);
        let px = random_bytes((w * h * 4) as usize, u64::from(o));
        let mut png = Vec::new();
        let mut enc = image::codecs::png::PngEncoder::new(&mut png);
        enc.set_exif_metadata(exif.clone()).expect("png exif");
        enc.write_image(&px, w, h, ExtendedColorType::Rgba8)
            .expect("png");
        std::fs::write(inputs.join(format!("o{o}.png")), png).expect("write");
        let mut jpg = Vec::new();
        let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpg, 95);
        enc.set_exif_metadata(exif).expect("jpeg exif");
        enc.write_image(&px[..(w * h * 3) as usize], w, h, ExtendedColorType::Rgb8)
            .expect("jpeg");
        std::fs::write(inputs.join(format!("o{o}.jpg")), jpg).expect("write");
    }
    let out = dir.path().join("out");
    let ops = "linear,srgb";
    let o = run(&[s(&inputs), "--ops", ops, "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0));
    for o in 1..=8u8 {
        for ext in ["png", "jpg"] {
            // x.png and x.jpg share a stem: outputs take the whole file name.
            let input = inputs.join(format!("o{o}.{ext}"));
            let mut want = stored(&input);
            want.apply_orientation(Orientation::from_exif(o).expect("orientation"));
            let want = want.to_rgba8();
            let size = [want.width(), want.height()];
            let got = image::open(out.join(format!("o{o}.{ext}.png")))
                .expect("output")
                .to_rgba8();
            assert_eq!(
                [got.width(), got.height()],
                size,
                "orientation {o} ({ext}): size"
            );
            assert!(
                got.into_raw() == library(&ctx, ops, size, want.as_raw()),
                "orientation {o} ({ext}): pixels differ from the upright reference"
            );
        }
    }
}

#[test]
fn outputs_never_collide_nor_replace_earlier_ones_without_force() {
    let Some(ctx) = try_gpu("cli outputs", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    let a = write_png(&inputs.join("x.png"), 30, 20, true, 21);
    std::fs::write(inputs.join("x.jpg"), jpeg_bytes(24, 16, 22)).expect("write");
    let b = stored(&inputs.join("x.jpg")).to_rgba8().into_raw();
    let out = dir.path().join("out");
    let ops = "linear,blur:sigma=1,srgb";
    let args = [s(&inputs), "--ops", ops, "--out", s(&out)];
    // Several frames at once and one at a time: the same two outputs, each its own input's.
    for budget in ["256MiB", "2MiB"] {
        let _ = std::fs::remove_dir_all(&out);
        let o = run(&[&args[..], &["--budget", budget]].concat());
        assert_eq!(o.status.code(), Some(0), "budget {budget}");
        assert_eq!(outputs_in(&out), ["x.jpg.png", "x.png.png"]);
        for (name, px, size) in [("x.png.png", &a, [30, 20]), ("x.jpg.png", &b, [24, 16])] {
            let got = image::open(out.join(name)).expect("png").to_rgba8();
            assert!(
                got.into_raw() == library(&ctx, ops, size, px),
                "{name}: not its input's output"
            );
        }
    }
    // A second run refuses to replace them, and leaves them (and no temporary file) there.
    let before = std::fs::read(out.join("x.png.png")).expect("read");
    std::fs::write(out.join("x.png.png"), b"an earlier result").expect("write");
    refused(&args, 2, &["x.jpg.png", "exists already", "--force"]);
    assert_eq!(
        std::fs::read(out.join("x.png.png")).expect("read"),
        b"an earlier result"
    );
    let o = run(&[&args[..], &["--force"]].concat());
    assert_eq!(o.status.code(), Some(0));
    assert!(std::fs::read(out.join("x.png.png")).expect("read") == before);
    assert_eq!(outputs_in(&out), ["x.jpg.png", "x.png.png"]);
    // --force never writes over an input (alone, `x.png` would write `in/x.png`).
    let x = inputs.join("x.png");
    let input_bytes = std::fs::read(&x).expect("read");
    refused(
        &[s(&x), "--out", s(&inputs), "--force"],
        2,
        &["overwrite the input"],
    );
    assert!(std::fs::read(&x).expect("read") == input_bytes);
}

#[test]
fn one_bad_file_is_listed_and_the_others_are_written() {
    let Some(_) = try_gpu("cli bad file", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    // The bad files sort first and in the middle: neither stops the others.
    std::fs::write(inputs.join("a_notes.png"), b"not an image").expect("write");
    for (i, name) in ["b", "d", "e"].iter().enumerate() {
        write_png(
            &inputs.join(format!("{name}.png")),
            40 + i as u32,
            30,
            true,
            i as u64,
        );
    }
    let jpeg = jpeg_bytes(40, 30, 31);
    std::fs::write(inputs.join("c_cut.jpg"), &jpeg[..jpeg.len() / 2]).expect("write");
    for budget in ["256MiB", "2MiB"] {
        let out = dir.path().join(format!("out-{budget}"));
        let report = dir.path().join(format!("{budget}.json"));
        let o = run(&[
            s(&inputs),
            "--ops",
            "linear,resize:20x10,srgb",
            "--budget",
            budget,
            "--out",
            s(&out),
            "--json",
            s(&report),
        ]);
        // The code of the first failure (an input: 3), after every good file was written.
        assert_eq!(o.status.code(), Some(3), "budget {budget}");
        assert_eq!(outputs_in(&out), ["b.png", "d.png", "e.png"]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stdout.contains("frames/s"), "no summary table: {stdout}");
        assert!(stdout.contains("failed: 2 of 5"), "{stdout}");
        for (bad, why) in [
            ("a_notes.png", "not a PNG or JPEG"),
            ("c_cut.jpg", "cut short"),
        ] {
            assert!(
                stdout.lines().any(|l| l.contains(bad) && l.contains(why)),
                "{bad}: not listed with its reason: {stdout}"
            );
            assert!(stderr.contains(&format!("error: {}", s(&inputs.join(bad)))));
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
        assert_eq!(json["exit_code"], 3);
        assert_eq!(json["totals"]["written"], 3);
        assert_eq!(json["totals"]["failed"], 2);
        let files = json["files"].as_array().expect("files");
        assert_eq!(files.len(), 5);
        for f in files {
            let input = f["input"].as_str().expect("input");
            let output = PathBuf::from(f["output"].as_str().expect("output"));
            if input.contains("notes") || input.contains("cut") {
                assert_eq!(f["error"]["code"], 3, "{f}");
                assert!(f["error"]["message"]
                    .as_str()
                    .expect("message")
                    .contains(input));
                assert!(!output.exists());
                continue;
            }
            assert!(f["error"].is_null(), "{f}");
            let img = image::open(&output).expect("written");
            assert_eq!(f["output_size"]["width"], img.width());
            assert_eq!(f["output_size"]["height"], img.height());
            assert_eq!(
                f["output_bytes"],
                std::fs::metadata(&output).expect("meta").len()
            );
            let src = image::open(input).expect("input");
            assert_eq!(f["input_size"]["width"], src.width());
            assert!(f["tiles"].as_u64().expect("tiles") >= 1);
            assert!(f["seconds"].as_f64().expect("seconds") >= 0.0);
        }
    }
}

#[test]
fn grey_inputs_are_their_rgba_expansion() {
    let Some(ctx) = try_gpu("cli grey", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (33u32, 17u32);
    let n = (w * h) as usize;
    let grey = random_bytes(n, 41);
    let ga = random_bytes(2 * n, 42);
    let mut jpg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpg, 90)
        .write_image(&grey, w, h, ExtendedColorType::L8)
        .expect("grey jpeg");
    let files = [
        ("l.png", ExtendedColorType::L8, &grey),
        ("la.png", ExtendedColorType::La8, &ga),
    ];
    for (name, color, px) in files {
        image::save_buffer(dir.path().join(name), px, w, h, color).expect("png");
    }
    std::fs::write(dir.path().join("g.jpg"), &jpg).expect("write");
    // The JPEG's grey levels as the decoder gives them.
    let jpg_grey = image::load_from_memory(&jpg)
        .expect("jpeg")
        .to_luma8()
        .into_raw();
    let expand = |px: &[u8], alpha: bool| -> Vec<u8> {
        let step = if alpha { 2 } else { 1 };
        px.chunks_exact(step)
            .flat_map(|p| [p[0], p[0], p[0], if alpha { p[1] } else { 255 }])
            .collect()
    };
    let out = dir.path().join("out");
    let ops = "linear,blur:sigma=1.5,srgb";
    let o = run(&[s(dir.path()), "--ops", ops, "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0));
    for (name, rgba) in [
        ("l.png", expand(&grey, false)),
        ("la.png", expand(&ga, true)),
        ("g.png", expand(&jpg_grey, false)),
    ] {
        let got = image::open(out.join(name)).expect("output").to_rgba8();
        assert!(
            got.into_raw() == library(&ctx, ops, [w, h], &rgba),
            "{name}: differs from its RGBA expansion's output"
        );
    }
}

#[test]
fn outputs_in_jpeg_and_webp_by_extension_or_flag() {
    let Some(_) = try_gpu("cli formats", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("a.png");
    write_png(&input, 50, 40, true, 51);
    let ops = ["--ops", "linear,resize:25x15,srgb"];
    let png = dir.path().join("ref.png");
    assert_eq!(
        run(&[&[s(&input), "--out", s(&png)], &ops[..]].concat())
            .status
            .code(),
        Some(0)
    );
    let want = image::open(&png).expect("png").to_rgba8();
    assert_eq!((want.width(), want.height()), (25, 15));
    // WebP is lossless: the same pixels as the PNG.
    let webp_dir = dir.path().join("webp");
    let o = run(&[
        &[s(&input), "--out", s(&webp_dir), "--out-format", "webp"],
        &ops[..],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(0));
    let webp = std::fs::read(webp_dir.join("a.webp")).expect("a.webp");
    let got = image::load_from_memory_with_format(&webp, image::ImageFormat::WebP)
        .expect("a WebP")
        .to_rgba8();
    assert!(got == want, "lossless WebP differs from the PNG");
    // JPEG by extension and by flag; quality changes the file.
    let small = dir.path().join("q20.jpg");
    let fine = dir.path().join("q100.jpeg");
    for (path, q) in [(&small, "20"), (&fine, "100")] {
        let o = run(&[&[s(&input), "--out", s(path), "--quality", q], &ops[..]].concat());
        assert_eq!(o.status.code(), Some(0));
        let bytes = std::fs::read(path).expect("jpeg");
        let img =
            image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).expect("a JPEG");
        assert_eq!((img.width(), img.height()), (25, 15));
    }
    let len = |p: &Path| std::fs::metadata(p).expect("meta").len();
    assert!(len(&small) < len(&fine), "--quality changes nothing");
    let jpg_dir = dir.path().join("jpg");
    let o = run(&[
        &[s(&input), "--out", s(&jpg_dir), "--out-format", "jpg"],
        &ops[..],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(0));
    image::load_from_memory_with_format(
        &std::fs::read(jpg_dir.join("a.jpg")).expect("a.jpg"),
        image::ImageFormat::Jpeg,
    )
    .expect("a JPEG");
    // Refusals: a format that disagrees with the file name, a file for several inputs, a bad
    // quality.
    let other = dir.path().join("b.png");
    write_png(&other, 8, 8, false, 52);
    refused(
        &[
            s(&input),
            "--out",
            s(&dir.path().join("x.png")),
            "--out-format",
            "jpg",
        ],
        2,
        &["disagrees"],
    );
    refused(
        &[s(&input), s(&other), "--out", s(&dir.path().join("x.png"))],
        2,
        &["names one file", "2 inputs"],
    );
    let o = run(&[s(&input), "--quality", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn json_report_on_stdout_matches_the_files_written() {
    let Some(_) = try_gpu("cli json", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("a.png");
    write_png(&input, 31, 9, false, 61);
    let out = dir.path().join("out");
    let o = run(&[
        s(&input),
        "--ops",
        "linear,resize:12x7,srgb",
        "--out",
        s(&out),
        "--json",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0));
    // stdout is the JSON alone; the table goes to stderr.
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert!(String::from_utf8_lossy(&o.stderr).contains("frames/s"));
    let f = &json["files"][0];
    assert_eq!(f["input"], s(&input));
    let output = PathBuf::from(f["output"].as_str().expect("output"));
    assert_eq!(output, out.join("a.png"));
    let img = image::open(&output).expect("written");
    assert_eq!((img.width(), img.height()), (12, 7));
    assert_eq!(f["input_size"]["width"], 31);
    assert_eq!(f["output_size"]["height"], 7);
    assert_eq!(
        f["output_bytes"],
        std::fs::metadata(&output).expect("meta").len()
    );
    assert_eq!(json["totals"]["written"], 1);
    assert_eq!(json["exit_code"], 0);
}

#[test]
fn limits_say_which_limit_its_value_and_the_flag() {
    // Input or usage errors, whether or not a device opens: no GPU needed.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let big = dir.path().join("big.png");
    std::fs::write(&big, png_header_only(20_000, 20_000)).expect("write");
    refused(
        &[s(&big), "--out", s(&out)],
        3,
        &[
            "big.png",
            "20000x20000",
            "268435456",
            "--max-pixels 400000000",
        ],
    );
    // Raised, the header passes and the missing pixels are what is wrong.
    refused(
        &[s(&big), "--out", s(&out), "--max-pixels", "400000000"],
        3,
        &["big.png", "damaged"],
    );
    refused(
        &["--chart", "--ops", "resize:20000x20000", "--out", s(&out)],
        2,
        &["20000x20000", "268435456", "--max-pixels 400000000"],
    );
    refused(
        &["--chart", "--ops", "resize:70000x70000", "--out", s(&out)],
        2,
        &["70000", "65536", "no flag raises it"],
    );
    refused(
        &["--max-pixels", "2000000000", "--out", s(&out)],
        2,
        &["--max-pixels", "1073741824", "no flag raises it"],
    );
}
