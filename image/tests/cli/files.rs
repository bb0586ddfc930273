//! The files the tool writes, as the file system sees them: modes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use vramkit::ContextDesc;

use super::common::try_gpu;
use super::{tool, write_png};

/// Runs the tool under `umask` (through `sh`, so the test's own umask does not matter) and
/// asserts it succeeded.
fn run_with_umask(umask: &str, args: &[&str]) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(tool())
        .args(args)
        .output()
        .expect("run image_4k through sh");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// New outputs get the mode of any file the user creates (0666 less the umask), and `--force`
/// keeps the mode of the file it replaces.
#[test]
fn outputs_honour_the_umask_and_force_keeps_the_mode() {
    if try_gpu("cli file modes", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("a.png");
    write_png(&input, 12, 8, true, 5);
    let (input, out) = (input.to_str().expect("utf-8"), dir.path().join("out"));
    let out_s = out.to_str().expect("utf-8");
    for (umask, want) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let _ = std::fs::remove_dir_all(&out);
        run_with_umask(umask, &[input, "--ops", "linear,srgb", "--out", out_s]);
        assert_eq!(mode(&out.join("a.png")), want, "umask {umask}");
    }
    // A file replaced with --force keeps its mode, whatever the umask.
    let written = out.join("a.png");
    std::fs::set_permissions(&written, std::fs::Permissions::from_mode(0o604)).expect("chmod");
    run_with_umask(
        "077",
        &[input, "--ops", "linear,srgb", "--out", out_s, "--force"],
    );
    assert_eq!(mode(&written), 0o604);
}
