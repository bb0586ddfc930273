//! The image ops against an independent reference: `tests/reference/opencv_reference.py` writes
//! generated images (odd sizes, gradients, noise) and photographs from scikit-image, and
//! OpenCV's and numpy's float64 results for Gaussian blur, bilinear and area resize, the sRGB
//! transfer functions and chains of two. The library (each GPU backend, and the kernels' CPU
//! twins) and the 4K tool must be within 1 level (8-bit) of them on every channel. Needs python3
//! with numpy, cv2 and scikit-image: without them the tests skip with the reason, unless
//! `VRAMKIT_REQUIRE_REFERENCE=1` (set in CI) turns that into a failure.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{try_gpu, Mk};
use vramkit::backend::Backend;
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Op, Pipeline};
use vramkit_kernels::image::{Blur, ColorOp};
use vramkit_kernels::image_cpu;

/// The 4K tool's binary, which cargo builds for this crate's integration tests.
fn tool() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_image_4k"))
}

/// The most a channel may differ from OpenCV's rounded float64 result, in 8-bit levels.
const TOLERANCE: u8 = 1;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/reference/opencv_reference.py"
);

/// One line of the script's `cases.tsv`.
struct Case {
    name: String,
    input: PathBuf,
    ops: String,
    size: [u32; 2],
    reference: Vec<u8>,
}

/// The script's output directory (kept for the process) and its cases.
struct Reference {
    _dir: tempfile::TempDir,
    cases: Vec<Case>,
}

fn require_reference() -> bool {
    std::env::var("VRAMKIT_REQUIRE_REFERENCE").is_ok_and(|v| v == "1")
}

/// Why the reference cannot run here (python3 or its packages missing), if it cannot.
fn missing_python() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import numpy, cv2, skimage.data"])
        .output()
    {
        Err(e) => Some(format!("python3 could not be run ({e})")),
        Ok(o) if !o.status.success() => Some(format!(
            "python3 lacks numpy, cv2 or scikit-image ({}); \
             pip install numpy opencv-python-headless scikit-image",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("no message")
        )),
        Ok(_) => None,
    }
}

fn generate() -> Result<Reference, String> {
    if let Some(why) = missing_python() {
        return Err(why);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let o = Command::new("python3")
        .arg(SCRIPT)
        .arg(dir.path())
        .output()
        .expect("run python3");
    assert!(
        o.status.success(),
        "{SCRIPT} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let tsv = std::fs::read_to_string(dir.path().join("cases.tsv")).expect("cases.tsv");
    let cases = tsv
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 6, "cases.tsv line `{line}`");
            let num = |s: &str| s.parse::<u32>().expect("a size in cases.tsv");
            let size = [num(f[3]), num(f[4])];
            let reference = std::fs::read(dir.path().join(f[5])).expect("reference output");
            assert_eq!(reference.len() as u64, u64::from(size[0] * size[1]) * 4);
            Case {
                name: f[0].to_string(),
                input: dir.path().join(f[1]),
                ops: f[2].to_string(),
                size,
                reference,
            }
        })
        .collect();
    Ok(Reference { _dir: dir, cases })
}

/// The reference, generated once per test process; `None` (reason printed) when it cannot run.
fn reference(test: &str) -> Option<&'static Reference> {
    static REF: OnceLock<Result<Reference, String>> = OnceLock::new();
    match REF.get_or_init(generate) {
        Ok(r) => Some(r),
        Err(why) if require_reference() => {
            panic!("{test}: VRAMKIT_REQUIRE_REFERENCE=1 but {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}; set VRAMKIT_REQUIRE_REFERENCE=1 to fail instead");
            None
        }
    }
}

fn rgba8(path: &Path) -> (Vec<u8>, [u32; 2]) {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8();
    let size = [img.width(), img.height()];
    (img.into_raw(), size)
}

/// Prints the worst difference of `got` from the case's reference; returns a line naming the
/// case when it passes the tolerance.
fn compare(who: &str, case: &Case, got: &[u8]) -> Option<String> {
    assert_eq!(got.len(), case.reference.len(), "{who} {}: size", case.name);
    let (worst, at) = got
        .iter()
        .zip(&case.reference)
        .map(|(a, b)| a.abs_diff(*b))
        .enumerate()
        .fold((0u8, 0usize), |m, (i, d)| if d > m.0 { (d, i) } else { m });
    let over = got
        .iter()
        .zip(&case.reference)
        .filter(|(a, b)| a.abs_diff(**b) > TOLERANCE)
        .count();
    let px = (at / 4) as u32;
    let (x, y, c) = (px % case.size[0], px / case.size[0], at % 4);
    let line = format!(
        "{who} {:<24} {:<36} worst {worst} level(s) at ({x}, {y}) channel {c}: got {}, OpenCV {}; \
         {over} channel(s) over {TOLERANCE}",
        case.name, case.ops, got[at], case.reference[at]
    );
    eprintln!("{line}");
    (worst > TOLERANCE).then_some(line)
}

fn library_matches_opencv<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let who = ctx.adapter_info().api.to_string();
    let Some(reference) = reference(&format!("library_matches_opencv on {who}")) else {
        return;
    };
    let mut failures = Vec::new();
    for case in &reference.cases {
        let (input, size) = rgba8(&case.input);
        let ops = parse_chain(&case.ops).expect("the script's chains parse");
        let pipeline = Pipeline::new(ops, size).expect("pipeline");
        assert_eq!(pipeline.output_size(), case.size, "{}", case.name);
        let (out, _) = pipeline.run(&ctx, &input).expect("run");
        failures.extend(compare(&who, case, &out));
    }
    assert!(
        failures.is_empty(),
        "over {TOLERANCE} level(s) from OpenCV:\n{}",
        failures.join("\n")
    );
}

gpu_tests!(library_matches_opencv);

/// The kernels' CPU twins (what the GPU tests compare against; the host backend runs no shaders),
/// one op after another in f32 as the pipeline's default working format holds frames.
fn run_cpu_twins(ops: &[Op], input: &[u8], size: [u32; 2]) -> Vec<u8> {
    let packed: Vec<u32> = input
        .chunks_exact(4)
        .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
        .collect();
    let (mut px, [mut w, mut h]) = (image_cpu::unpack_rgba8_cpu(&packed), size);
    for op in ops {
        px = match *op {
            Op::Linear => image_cpu::color_cpu(&px, ColorOp::SrgbToLinear),
            Op::Srgb => image_cpu::color_cpu(&px, ColorOp::LinearToSrgb),
            Op::Blur { sigma } => {
                image_cpu::blur_cpu(&px, w, h, Blur::Gaussian { sigma }).expect("blur twin")
            }
            Op::Resize {
                width,
                height,
                filter,
            } => {
                let out = image_cpu::resize_cpu(&px, w, h, width, height, filter);
                [w, h] = [width, height];
                out
            }
            other => panic!("the script has no reference for {other}"),
        };
    }
    image_cpu::pack_rgba8_cpu(&px)
        .iter()
        .flat_map(|p| p.to_le_bytes())
        .collect()
}

#[test]
fn cpu_twins_match_opencv() {
    let Some(reference) = reference("cpu_twins_match_opencv") else {
        return;
    };
    let mut failures = Vec::new();
    for case in &reference.cases {
        let (input, size) = rgba8(&case.input);
        let ops = parse_chain(&case.ops).expect("the script's chains parse");
        failures.extend(compare("cpu", case, &run_cpu_twins(&ops, &input, size)));
    }
    assert!(
        failures.is_empty(),
        "over {TOLERANCE} level(s) from OpenCV:\n{}",
        failures.join("\n")
    );
}

/// The tool's decode, pipeline and encode, on photographs and a generated image, one file each.
#[test]
fn tool_matches_opencv() {
    let Some(reference) = reference("tool_matches_opencv") else {
        return;
    };
    if try_gpu("tool_matches_opencv", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for name in [
        "linear_blur_chelsea",
        "area_frac_coffee",
        "bilinear_down_noise",
    ] {
        let case = reference
            .cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("the script has no case {name}"));
        let out = dir.path().join(format!("{name}.png"));
        let o = Command::new(tool())
            .arg(&case.input)
            .args(["--ops", &case.ops, "--out"])
            .arg(&out)
            .output()
            .expect("run image_4k");
        assert!(
            o.status.success(),
            "image_4k {name}: exit {:?}\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let (got, size) = rgba8(&out);
        assert_eq!(size, case.size, "{name}: output size");
        failures.extend(compare("image_4k", case, &got));
    }
    assert!(
        failures.is_empty(),
        "over {TOLERANCE} level(s) from OpenCV:\n{}",
        failures.join("\n")
    );
}
