//! What the fuzz targets check, written once: the targets in `fuzz_targets/` call these on
//! generated inputs, and `image/tests/fuzz_corpus.rs` (on stable) replays the committed corpus
//! through them. Each panics only where vramkit or the 4K tool is wrong.

use std::io::Cursor;

use vramkit::backend::Backend;
use vramkit::{Context, Error};
use vramkit_image::{format_chain, parse_chain, Op, Pipeline};

/// The 4K tool's input path, as the tool compiles it.
#[allow(
    dead_code,
    reason = "the checks use only the decoding, not the file loading"
)]
#[path = "../image/src/bin/image_4k/input.rs"]
pub mod input;

use input::{decode, InputLimits, Samples};

/// Limits for fuzzing: small enough that no input makes a run slow or large, large enough to
/// reach every limit check.
pub const FUZZ_LIMITS: InputLimits = InputLimits {
    max_side: 1024,
    max_pixels: 1 << 18,
};

/// Images of at most this many pixels also run through a pipeline.
pub const PIPELINE_PIXELS: u64 = 64 * 64;

/// `parse_chain` on `data` (as UTF-8, invalid bytes replaced): a typed error, or a chain whose
/// text parses back to itself, whose ops are valid and which makes a pipeline.
pub fn parse_chain_checks(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match parse_chain(&text) {
        Ok(ops) => {
            assert!(!ops.is_empty(), "`{text}` parsed to an empty chain");
            let written = format_chain(&ops);
            let again = match parse_chain(&written) {
                Ok(again) => again,
                Err(e) => panic!("`{text}` writes as `{written}`, which does not parse: {e}"),
            };
            assert_eq!(again, ops, "`{text}` → `{written}` parses differently");
            assert_eq!(
                format_chain(&again),
                written,
                "`{written}` writes differently"
            );
            for op in &ops {
                if let Err(e) = op.validate() {
                    panic!("`{text}` parsed to `{op}`, which is invalid: {e}");
                }
            }
            pipeline_checks(ops, &text);
        }
        Err(e @ Error::InvalidParameter { .. }) => {
            assert!(!e.to_string().is_empty());
        }
        Err(e) => panic!("`{text}`: not an InvalidParameter: {e:?}"),
    }
}

/// A parsed chain makes a pipeline for a small frame, which plans without a device.
fn pipeline_checks(ops: Vec<Op>, text: &str) {
    let p = match Pipeline::new(ops, [64, 48]) {
        Ok(p) => p,
        Err(e) => panic!("`{text}` parses but makes no pipeline: {e}"),
    };
    let [w, h] = p.output_size();
    assert!(w >= 1 && h >= 1, "`{text}`: an empty output");
    match p.plan(u64::MAX) {
        Ok(tile) => assert_eq!(tile, [w, h], "`{text}`: no budget, one tile"),
        Err(e) => panic!("`{text}`: no plan without a budget: {e}"),
    }
    // A small budget tiles or says what it needs.
    match p.plan(1 << 20) {
        Ok(tile) => assert!(tile[0] >= 1 && tile[0] <= w && tile[1] >= 1 && tile[1] <= h),
        Err(Error::OverBudget { requested, .. }) => assert!(requested > 1 << 20),
        Err(e) => panic!("`{text}`: planning for 1 MiB: {e:?}"),
    }
}

/// The tool's decoding of `data` within [`FUZZ_LIMITS`]: an input error with a message, or an
/// RGBA8 frame of the size the header gave; frames of at most [`PIPELINE_PIXELS`] then run
/// through a resize-and-blur chain on `ctx` when there is one.
pub fn image_input<B: Backend>(data: &[u8], ctx: Option<&Context<B>>) {
    let img = match decode(Cursor::new(data), &FUZZ_LIMITS) {
        Ok(img) => img,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let [w, h] = img.size;
    assert!(w >= 1 && h >= 1, "decoded an empty {w}x{h} image");
    assert!(
        w <= FUZZ_LIMITS.max_side
            && h <= FUZZ_LIMITS.max_side
            && u64::from(w) * u64::from(h) <= FUZZ_LIMITS.max_pixels,
        "decoded a {w}x{h} image past the limits"
    );
    let samples = match &img.samples {
        Samples::Rgba8(v) => v.len(),
        Samples::Rgba16(v) => v.len(),
    };
    assert_eq!(samples as u64, u64::from(w) * u64::from(h) * 4);
    let Some(ctx) = ctx else { return };
    if u64::from(w) * u64::from(h) > PIPELINE_PIXELS {
        return;
    }
    let text = format!(
        "linear,blur:sigma=1,resize:{}x{}:area,srgb",
        w.div_ceil(2),
        h.div_ceil(2)
    );
    let chain = match parse_chain(&text) {
        Ok(chain) => chain,
        Err(e) => panic!("`{text}`: {e}"),
    };
    let p = match Pipeline::new(chain, [w, h]) {
        Ok(p) => p,
        Err(e) => panic!("a {w}x{h} frame makes no pipeline: {e}"),
    };
    // Samples out and the bytes they take.
    let run = match &img.samples {
        Samples::Rgba8(px) => p.run(ctx, px).map(|(out, r)| (out.len(), out.len(), r)),
        Samples::Rgba16(px) => p
            .run_rgba16(ctx, px)
            .map(|(out, r)| (out.len(), 2 * out.len(), r)),
    };
    match run {
        Ok((samples, bytes, report)) => {
            let [ow, oh] = p.output_size();
            assert_eq!(samples as u64, u64::from(ow) * u64::from(oh) * 4);
            assert!(report.host_bytes >= bytes as u64);
        }
        Err(e) => panic!("a {w}x{h} frame did not run: {e}"),
    }
}
