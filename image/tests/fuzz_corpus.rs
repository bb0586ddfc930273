//! Replays the committed corpora of the image fuzz targets (`fuzz/corpus/parse_chain/`,
//! `image_input/`) through the checks the fuzz
//! targets run (`fuzz/checks.rs`), on the stable toolchain: every input that ever found a bug
//! stays a regression test, without cargo-fuzz or nightly.

#[path = "../../tests/common/mod.rs"]
mod common;

#[path = "../../fuzz/checks.rs"]
mod checks;

#[path = "../../fuzz/common/corpus.rs"]
mod corpus;

use corpus::{corpus, replay};

use vramkit::ContextDesc;

#[test]
fn parse_chain_corpus() {
    replay(
        &corpus(env!("CARGO_MANIFEST_DIR"), "parse_chain"),
        checks::parse_chain_checks,
    );
}

#[test]
fn image_input_corpus() {
    let files = corpus(env!("CARGO_MANIFEST_DIR"), "image_input");
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
