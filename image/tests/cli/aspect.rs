//! A resize that changes a photo's shape (the default chain's 1920x1080 on a portrait photo)
//! stretches it as asked, and says so on stderr and in the JSON report, with the size that
//! keeps the shape.

use vramkit::ContextDesc;

use super::common::try_gpu;
use super::{run, write_png};

#[test]
fn a_stretching_resize_is_said() {
    if try_gpu("cli aspect", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let portrait = dir.path().join("portrait.png");
    write_png(&portrait, 48, 64, false, 5);
    let json = dir.path().join("report.json");
    let o = run(&[
        portrait.to_str().expect("utf-8"),
        "--ops",
        "linear,resize:64x36,srgb",
        "--out",
        dir.path().join("out").to_str().expect("utf-8"),
        "--json",
        json.to_str().expect("utf-8"),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let said = "resize:64x36 stretches its 48x64 pixels (0.75:1) to 1.78:1; resize:27x36 keeps";
    assert!(stderr.contains(said), "{stderr}");
    let report = std::fs::read_to_string(&json).expect("the report");
    assert!(report.contains(said), "{report}");
    let out = image::open(dir.path().join("out/portrait.png")).expect("the output");
    assert_eq!((out.width(), out.height()), (64, 36), "stretched as asked");
}
