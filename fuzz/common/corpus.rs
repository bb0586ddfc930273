//! The committed fuzz corpora, read and replayed on the stable toolchain by the crates' tests.

use std::path::Path;

/// The files of one target's corpus, sorted: `fuzz/corpus/<target>/` of the workspace whose
/// member's manifest directory is `manifest_dir` (the workspace root or a crate beside `fuzz/`).
pub fn corpus(manifest_dir: &str, target: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(manifest_dir);
    let root = if root.join("fuzz").is_dir() {
        root
    } else {
        root.parent().unwrap_or(root)
    };
    let dir = root.join("fuzz").join("corpus").join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("corpus entry").path();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "{}: the corpus is missing",
        dir.display()
    );
    files
}

/// Runs `check` on every file, naming the file that fails.
pub fn replay(files: &[(String, Vec<u8>)], check: impl Fn(&[u8])) {
    for (name, bytes) in files {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(bytes)));
        if caught.is_err() {
            panic!("{name}: the fuzz check failed on this corpus file (message above)");
        }
    }
}
