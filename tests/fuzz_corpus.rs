//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the checks the fuzz
//! targets run (`fuzz/common/edge_ops.rs`; the image targets' corpora are replayed by
//! `vramkit-image`'s tests), on the stable toolchain: every input that ever found a bug
//! stays a regression test, without cargo-fuzz or nightly.

#[path = "../fuzz/common/corpus.rs"]
mod corpus;

#[path = "../fuzz/common/edge_ops.rs"]
mod edge_ops;

use corpus::{corpus, replay};

/// Leases, budgets, compaction and runtime-kernel checks on the host backend.
#[test]
fn edge_ops_corpus() {
    replay(
        &corpus(env!("CARGO_MANIFEST_DIR"), "edge_ops"),
        edge_ops::run,
    );
}
