//! Replays the corpus of the `edge_ops` fuzz target (`fuzz/corpus/edge_ops/`) on the stable
//! toolchain: leases, budgets, compaction and runtime-kernel checks on the host backend.

#[path = "../fuzz/common/edge_ops.rs"]
mod edge_ops;

#[test]
fn the_edge_ops_corpus_replays_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/edge_ops");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "{}: the corpus is missing",
        dir.display()
    );
    for path in files {
        let data = std::fs::read(&path).expect("read");
        let run = std::panic::catch_unwind(|| edge_ops::run(&data));
        assert!(
            run.is_ok(),
            "{} fails: replay it with `cargo +nightly fuzz run edge_ops {}`",
            path.display(),
            path.display()
        );
    }
}
