//! Hostile inputs across the public API: every bad input gives its typed [`vramkit::Error`]
//! with a message that names what was wrong and says what to do; never a panic, an abort, a
//! hang or a silent wrong answer, in debug and release builds alike.
//!
//! One test runs a table of named cases. Cases that could crash the process (huge sizes,
//! overflow-prone arithmetic, anything on the GPU) run in a child process (this binary,
//! re-executed with `BAD_INPUT_CASE` naming the case) under a timeout; the rest run in-process
//! under `catch_unwind`. Every failure is collected into one report, so one run lists them all.
//!
//! `BAD_INPUT_ONLY=<text>` runs the cases whose names contain `<text>`; `BAD_INPUT_ISOLATE=1`
//! runs every case in a child process. GPU cases use the wgpu adapter (`WGPU_BACKEND`, e.g.
//! `WGPU_BACKEND=vulkan` for lavapipe) and skip, saying so, where there is none.

mod common;

#[macro_use]
#[path = "bad_input/check.rs"]
mod check;

#[path = "bad_input/alloc.rs"]
mod alloc;
#[path = "bad_input/dispatch.rs"]
mod dispatch;
#[path = "bad_input/handles.rs"]
mod handles;
#[path = "bad_input/harness.rs"]
mod harness;
#[path = "bad_input/image.rs"]
mod image;
#[path = "bad_input/image_params.rs"]
mod image_params;
#[path = "bad_input/kernels.rs"]
mod kernels;
#[path = "bad_input/observe.rs"]
mod observe;
#[path = "bad_input/settings.rs"]
mod settings;
#[path = "bad_input/staging.rs"]
mod staging;
#[path = "bad_input/transfer.rs"]
mod transfer;

use harness::Case;

/// Every case, by area.
fn cases() -> Vec<&'static Case> {
    let all = [
        alloc::CASES,
        settings::CASES,
        handles::CASES,
        transfer::CASES,
        staging::CASES,
        observe::CASES,
        dispatch::CASES,
        kernels::CASES,
        image::CASES,
        image_params::CASES,
    ]
    .into_iter()
    .flatten();
    #[cfg(feature = "trace-export")]
    let all = all.chain(observe::EXPORT_CASES);
    all.collect()
}

#[test]
fn every_bad_input_gives_a_typed_error() {
    harness::run_all(&cases(), "every_bad_input_gives_a_typed_error");
}
