//! The 4K tool end to end: generated inputs, a directory, the built-in chart, and the exit codes
//! a person can act on. It runs the `image_4k` binary that `cargo test` builds for this crate's tests.

#[path = "../../tests/common/mod.rs"]
mod common;

#[path = "cli/animated.rs"]
mod animated;
#[path = "cli/aspect.rs"]
mod aspect;
#[path = "cli/background.rs"]
mod background;
#[path = "cli/colour.rs"]
mod colour;
#[path = "cli/damaged.rs"]
mod damaged;
#[path = "cli/deep.rs"]
mod deep;
#[path = "cli/devices.rs"]
mod devices;
#[cfg(unix)]
#[path = "cli/files.rs"]
mod files;
#[path = "cli/folders.rs"]
mod folders;
#[path = "cli/jpeg_end.rs"]
mod jpeg_end;
#[path = "cli/metadata.rs"]
mod metadata;
#[path = "cli/out_paths.rs"]
mod out_paths;
#[path = "cli/product.rs"]
mod product;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::{random_bytes, try_gpu};
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Pipeline};

/// The 4K tool's binary, which cargo builds for this crate's integration tests.
fn tool() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_image_4k"))
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(tool())
        .args(args)
        .output()
        .expect("run image_4k");
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the tool, asserts it exited 0, and returns its stderr.
fn run_ok(args: &[&str]) -> String {
    let o = run(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
    stderr
}

fn write_png(path: &std::path::Path, w: u32, h: u32, rgba: bool, seed: u64) -> Vec<u8> {
    let channels = if rgba { 4 } else { 3 };
    let px = random_bytes((w * h * channels) as usize, seed);
    let color = if rgba {
        image::ExtendedColorType::Rgba8
    } else {
        image::ExtendedColorType::Rgb8
    };
    image::save_buffer(path, &px, w, h, color).expect("write png");
    image::open(path).expect("read back").to_rgba8().into_raw()
}

#[test]
fn processes_files_and_directories_like_the_library() {
    let Some(ctx) = try_gpu("cli files", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    let a = write_png(&inputs.join("a.png"), 301, 187, true, 1);
    let b = write_png(&inputs.join("b.png"), 120, 80, false, 2);
    let out = dir.path().join("out");
    let ops = "linear,blur:sigma=1.5,resize:150x90:area,srgb";
    let o = run(&[
        inputs.to_str().expect("utf-8"),
        "--ops",
        ops,
        "--budget",
        "2MiB",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "exit {:?}", o.status);
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains("peak reserved") && report.contains("frames/s"),
        "{report}"
    );
    // With room for several frames' working sets, frames run at once, with the same results.
    let c = write_png(&inputs.join("c.png"), 200, 120, true, 4);
    let wide = dir.path().join("wide");
    let o = run(&[
        inputs.to_str().expect("utf-8"),
        "--ops",
        ops,
        "--budget",
        "256MiB",
        "--out",
        wide.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "exit {:?}", o.status);
    // As many as there are files, up to one per core.
    let at_once = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(3);
    if at_once > 1 {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(&format!("{at_once} frames at once")),
            "{stderr}"
        );
    }
    for name in ["a", "b"] {
        let one = image::open(out.join(format!("{name}.png")))
            .expect("png")
            .to_rgba8();
        let many = image::open(wide.join(format!("{name}.png")))
            .expect("png")
            .to_rgba8();
        assert!(one == many, "{name}: concurrent frames differ");
    }
    // The RGBA8 working format gives what the library gives with it.
    let eight = dir.path().join("eight");
    let o = run(&[
        inputs.to_str().expect("utf-8"),
        "--ops",
        ops,
        "--format",
        "rgba8",
        "--budget",
        "2MiB",
        "--out",
        eight.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "exit {:?}", o.status);
    let p = Pipeline::new(parse_chain(ops).expect("chain"), [301, 187]).expect("pipeline");
    let (want, _) = p
        .with_working_format(vramkit_image::PixelFormat::Rgba8)
        .run(&ctx, &a)
        .expect("library run");
    assert!(
        image::open(eight.join("a.png"))
            .expect("png")
            .to_rgba8()
            .into_raw()
            == want,
        "rgba8: the tool differs from the library"
    );
    // Each output is a valid PNG equal to what the library makes of the same input.
    for (name, px, size) in [
        ("a", &a, [301, 187]),
        ("b", &b, [120, 80]),
        ("c", &c, [200, 120]),
    ] {
        let out = if name == "c" { &wide } else { &out };
        let png = image::open(out.join(format!("{name}.png")))
            .expect("a valid PNG")
            .to_rgba8();
        assert_eq!((png.width(), png.height()), (150, 90));
        let p = Pipeline::new(parse_chain(ops).expect("chain"), size).expect("pipeline");
        let (want, _) = p.run(&ctx, px).expect("library run");
        assert!(
            png.into_raw() == want,
            "{name}: the tool's output differs from the library's"
        );
    }
}

#[test]
fn runs_the_built_in_chart_under_a_budget() {
    let Some(_) = try_gpu("cli default", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, plot) = (dir.path().join("mem.json"), dir.path().join("mem.svg"));
    let o = run(&[
        "--chart",
        "--budget",
        "256MiB",
        "--out",
        dir.path().to_str().expect("utf-8"),
        "--trace",
        trace.to_str().expect("utf-8"),
        "--plot",
        plot.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "exit {:?}", o.status);
    let png = image::open(dir.path().join("test_chart.png")).expect("a valid PNG");
    assert_eq!((png.width(), png.height()), (1920, 1080));
    assert!(String::from_utf8_lossy(&o.stdout).contains("wrote"));
    // The timeline: frames allocated and released, never past the budget.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace written"))
            .expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("events");
    let allocs = events
        .iter()
        .filter(|e| e["name"] == "alloc" && e["ph"] == "i")
        .count();
    let releases = events
        .iter()
        .filter(|e| e["name"] == "release" && e["ph"] == "i")
        .count();
    assert!(
        allocs >= 5 && allocs == releases,
        "{allocs} allocs, {releases} releases"
    );
    assert!(events
        .iter()
        .filter(|e| e["name"] == "memory (all kinds)")
        .all(
            |e| e["args"]["reserved"].as_u64().expect("bytes") <= 256 << 20
                && e["args"]["budget"] == 256u64 << 20
        ));
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
}

#[test]
fn exit_codes_say_what_went_wrong() {
    let Some(_) = try_gpu("cli errors", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // Not the inputs' directory: the tool refuses to write over its inputs.
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8");
    let small = dir.path().join("small.png");
    write_png(&small, 200, 200, true, 3);
    let small = small.to_str().expect("utf-8");
    // A budget too small for the smallest tile: code 4, with the minimum.
    let o = run(&[
        small,
        "--ops",
        "blur:sigma=8",
        "--budget",
        "100KiB",
        "--out",
        out,
    ]);
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least"));
    // An unreadable file and a file that is not an image: code 3.
    let o = run(&["/nonexistent/frame.png", "--out", out]);
    assert_eq!(o.status.code(), Some(3));
    let text = dir.path().join("notes.png");
    std::fs::write(&text, b"not an image").expect("write");
    assert_eq!(
        run(&[text.to_str().expect("utf-8"), "--out", out])
            .status
            .code(),
        Some(3)
    );
    // A bad chain or backend: code 2.
    assert_eq!(
        run(&[small, "--ops", "sharpen", "--out", out])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        run(&[small, "--backend", "opencl", "--out", out])
            .status
            .code(),
        Some(2)
    );
    let o = run(&[small, "--budget", "lots", "--out", out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("`lots` is not a size: write a number and a unit"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // CUDA: usage error in a build without the feature; with it, no driver is "no GPU" (5).
    let cuda = run(&[small, "--backend", "cuda", "--out", out]);
    #[cfg(feature = "cuda")]
    let expected = if vramkit::Context::cuda(0, ContextDesc::default()).is_ok() {
        0
    } else {
        5
    };
    #[cfg(not(feature = "cuda"))]
    let expected = 2;
    assert_eq!(
        cuda.status.code(),
        Some(expected),
        "{}",
        String::from_utf8_lossy(&cuda.stderr)
    );
}

/// Appends a PNG chunk of `kind` holding `data` to `out`: length, type, data and checksum.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.sum().to_be_bytes());
}

/// A PNG's signature and header chunk for `w × h` 8-bit RGB pixels.
fn png_start(w: u32, h: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png_chunk(&mut png, b"IHDR", &ihdr);
    png
}

/// A PNG of `w × h` 8-bit RGB pixels whose header is all there is: one tiny image-data chunk,
/// so that a decoder reads the size and stops.
fn png_header_only(w: u32, h: u32) -> Vec<u8> {
    let mut png = png_start(w, h);
    png_chunk(
        &mut png,
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    png_chunk(&mut png, b"IEND", &[]);
    png
}

/// Runs the tool and asserts its exit code and that its message names every one of `needles`.
fn refused(args: &[&str], code: i32, needles: &[&str]) {
    let o = run(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: `{stderr}` does not name {needle:?}"
        );
    }
}

// These are refused whether or not a device opens, so they need no GPU.

#[test]
fn never_overwrites_an_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    let a = inputs.join("a.png");
    write_png(&a, 20, 10, true, 5);
    let before = std::fs::read(&a).expect("read");
    let (a_s, in_s) = (a.to_str().expect("utf-8"), inputs.to_str().expect("utf-8"));
    // The output directory is the input's: `in/a.png` would be written over itself.
    refused(&[a_s, "--out", in_s], 2, &["overwrite the input", "a.png"]);
    refused(&[in_s, "--out", in_s], 2, &["overwrite the input", "a.png"]);
    // Through another spelling of the same directory.
    let dotted = format!("{in_s}/../in");
    refused(&[a_s, "--out", &dotted], 2, &["overwrite the input"]);
    // Two inputs of one name would write one output.
    let other = dir.path().join("other");
    std::fs::create_dir(&other).expect("mkdir");
    write_png(&other.join("a.png"), 4, 4, false, 6);
    let out = dir.path().join("out");
    let out_s = out.to_str().expect("utf-8");
    let b = other.join("a.png");
    refused(
        &[a_s, b.to_str().expect("utf-8"), "--out", out_s],
        2,
        &["both", "a.png"],
    );
    // One input given twice is made once.
    let once = dir.path().join("once");
    run_ok(&[a_s, a_s, "--out", once.to_str().expect("utf-8")]);
    assert_eq!(std::fs::read_dir(&once).expect("once").count(), 1);
    // An output that is a link to the input.
    #[cfg(unix)]
    {
        std::fs::create_dir(&out).expect("mkdir");
        std::os::unix::fs::symlink(&a, out.join("a.png")).expect("symlink");
        refused(&[a_s, "--out", out_s], 2, &["overwrite the input"]);
        std::fs::remove_file(out.join("a.png")).expect("unlink");
        std::fs::hard_link(&a, out.join("a.png")).expect("hard link");
        refused(&[a_s, "--out", out_s], 2, &["overwrite the input"]);
    }
    assert!(
        std::fs::read(&a).expect("read") == before,
        "the input was changed"
    );
}

#[test]
fn impossible_chains_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().to_str().expect("utf-8");
    // This chain used to abort the process allocating 40 GB of output.
    refused(
        &["--chart", "--ops", "resize:100000x100000", "--out", out],
        2,
        &["`100000`", "65536"],
    );
    refused(
        &["--chart", "--ops", "linear:foo=1", "--out", out],
        2,
        &["`foo=1`", "no arguments"],
    );
    refused(
        &["--chart", "--ops", "adjust:contrast=NaN", "--out", out],
        2,
        &["`NaN`", "finite"],
    );
    refused(&["--chart", "--ops", "", "--out", out], 2, &["empty"]);
}
