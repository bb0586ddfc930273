//! Replays the corpus of the `memory_ops` fuzz target (`fuzz/corpus/memory_ops/`) on the stable
//! toolchain: every input the fuzzer kept runs through the same checks (`fuzz/common`).

#[path = "../fuzz/common/memory_ops.rs"]
mod memory_ops;

#[test]
fn the_memory_ops_corpus_replays_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/memory_ops");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus is empty");
    for f in &files {
        let data = std::fs::read(f).expect("read");
        let run = std::panic::catch_unwind(|| memory_ops::run(&data));
        assert!(
            run.is_ok(),
            "{} fails: replay it with `cargo +nightly fuzz run memory_ops {}`",
            f.display(),
            f.display()
        );
    }
    println!("{} inputs replayed", files.len());
}
