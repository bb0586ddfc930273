//! What `--out` may name: checked before a device is looked for, so these need no GPU.

use super::{refused, write_png};

/// An output file of a format the tool does not write, and an existing file that is neither a
/// directory nor an output of a format it writes, are usage errors that say what to give; a
/// directory name with a dot in it is still a directory.
#[test]
fn out_names_a_directory_or_a_file_the_tool_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("a.png");
    write_png(&input, 8, 8, true, 9);
    let input = input.to_str().expect("utf-8");
    let tiff = dir.path().join("result.tiff");
    let tiff_s = tiff.to_str().expect("utf-8");
    refused(
        &[input, "--out", tiff_s],
        2,
        &["result.tiff", ".tiff", "png, jpg"],
    );
    assert!(!tiff.exists(), "no directory named result.tiff is made");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, b"keep me").expect("write");
    let notes_s = notes.to_str().expect("utf-8");
    refused(
        &[input, "--out", notes_s],
        2,
        &["notes.txt", "existing file", "directory"],
    );
    refused(&[input, "--out", notes_s, "--force"], 2, &["existing file"]);
    assert_eq!(std::fs::read(&notes).expect("read"), b"keep me");
    // Not refused for its name: a directory with a dot, and an output file the tool writes.
    for ok in ["photos.2024", "one.png"] {
        let out = dir.path().join(ok);
        let o = super::run(&[
            input,
            "--out",
            out.to_str().expect("utf-8"),
            "--budget",
            "1KiB",
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("--out"), "{ok}: {stderr}");
    }
}
