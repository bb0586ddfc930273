//! The 4K tool's input path on arbitrary bytes: decoded as the tool decodes files (small
//! limits, so each run stays fast), and tiny images run through a short pipeline on the wgpu
//! adapter when there is one (lavapipe on a machine without a GPU). `VRAMKIT_FUZZ_GPU=0`
//! skips the pipeline.

#![no_main]

use std::sync::OnceLock;

use vramkit::{Context, ContextDesc};

#[allow(dead_code, reason = "this target uses only the image checks")]
#[path = "../checks.rs"]
mod checks;

/// The context every run shares, made on the first.
fn gpu() -> Option<&'static Context> {
    static CTX: OnceLock<Option<Context>> = OnceLock::new();
    CTX.get_or_init(|| {
        if std::env::var("VRAMKIT_FUZZ_GPU").is_ok_and(|v| v == "0") {
            eprintln!("image_input: VRAMKIT_FUZZ_GPU=0: decoding only");
            return None;
        }
        match Context::new(ContextDesc {
            budget: Some(64 << 20),
            ..Default::default()
        }) {
            Ok(ctx) => {
                eprintln!("image_input: pipelines run on {}", ctx.adapter_info());
                Some(ctx)
            }
            Err(e) => {
                eprintln!("image_input: no GPU adapter ({e}): decoding only");
                None
            }
        }
    })
    .as_ref()
}

libfuzzer_sys::fuzz_target!(
    init: {
        // As the tool does: a panic inside a decoder is caught and reported as a damaged
        // image, so libFuzzer's aborting hook must not see it; every other panic still aborts.
        checks::input::quiet_decoder_panics();
    },
    |data: &[u8]| checks::image_input(data, gpu())
);
