//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the checks the fuzz
//! targets run (`fuzz/checks.rs`), on the stable toolchain: every input that ever found a bug
//! stays a regression test, without cargo-fuzz or nightly.

mod common;

#[path = "../fuzz/checks.rs"]
mod checks;

#[path = "../fuzz/common/edge_ops.rs"]
mod edge_ops;

use std::path::PathBuf;

use vramkit::ContextDesc;

/// The files of one target's corpus, sorted.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("corpus")
        .join(target);
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
fn replay(files: &[(String, Vec<u8>)], check: impl Fn(&[u8])) {
    for (name, bytes) in files {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(bytes)));
        if caught.is_err() {
            panic!("{name}: the fuzz check failed on this corpus file (message above)");
        }
    }
}

/// Leases, budgets, compaction and runtime-kernel checks on the host backend.
#[test]
fn edge_ops_corpus() {
    replay(&corpus("edge_ops"), edge_ops::run);
}

#[test]
fn parse_chain_corpus() {
    replay(&corpus("parse_chain"), checks::parse_chain_checks);
}

#[test]
fn image_input_corpus() {
    let files = corpus("image_input");
    checks::input::quiet_decoder_panics();
    // Decoding needs no device; the pipeline runs where there is an adapter.
    let ctx = common::try_gpu(
        "image_input_corpus (pipelines; decoding runs regardless)",
        ContextDesc {
            budget: Some(64 << 20),
            ..Default::default()
        },
    );
    replay(&files, |bytes| checks::image_input(bytes, ctx.as_ref()));
}
