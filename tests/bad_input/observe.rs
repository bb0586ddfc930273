//! Checkpoints and growth, and traces written where they cannot be.

use vramkit::Error;

use crate::check::{alloc, host, KIB};
use crate::harness::Case;

pub const CASES: &[Case] = &[
    Case::new("check_no_growth: one leaked allocation", growth_one),
    Case::new("check_no_growth: leaks under two labels", growth_two),
    Case::new(
        "growth_since: checkpoint of another context",
        growth_foreign,
    ),
    Case::new(
        "check_no_growth: checkpoint of another context",
        check_foreign,
    ),
];

/// Exporting traces (feature `trace-export`).
#[cfg(feature = "trace-export")]
pub const EXPORT_CASES: &[Case] = &[
    Case::new(
        "Trace::write_chrome_json: missing directory",
        json_missing_dir,
    ),
    Case::new("Trace::write_chrome_json: empty path", json_empty_path),
    Case::new("Trace::write_svg: path is a directory", svg_to_directory),
    Case::new("Trace::to_svg: 0x0 pixels", svg_zero),
    Case::isolated("Trace::to_svg: u32::MAX x u32::MAX pixels", svg_huge),
];

/// `needle` occurs exactly `n` times in `hay`.
#[track_caller]
fn occurs(hay: &str, needle: &str, n: usize) {
    let found = hay.matches(needle).count();
    assert!(
        found == n,
        "MESSAGE states `{needle}` {found} times, not {n}: {hay}"
    );
}

fn growth_one() {
    let ctx = host();
    let cp = ctx.observe().checkpoint();
    let _leak = alloc(&ctx, "leaky-buffer", 3 * KIB);
    let e = expect_err!(
        ctx.observe().check_no_growth(&cp),
        Error::MemoryGrowth { .. },
        ["`leaky-buffer`", "3.0 KiB|3072"],
        ["release"]
    );
    let msg = e.to_string();
    occurs(&msg, "leaky-buffer", 1);
    occurs(&msg, "allocation(s)", 1);
}

fn growth_two() {
    let ctx = host();
    let _before = alloc(&ctx, "before-checkpoint", KIB);
    let cp = ctx.observe().checkpoint();
    let _a = alloc(&ctx, "first-leak", KIB);
    let _b = alloc(&ctx, "second-leak", 2 * KIB);
    let _c = alloc(&ctx, "second-leak", 2 * KIB);
    let e = expect_err!(
        ctx.observe().check_no_growth(&cp),
        Error::MemoryGrowth { .. },
        ["`first-leak`", "`second-leak`"],
        ["release"]
    );
    let msg = e.to_string();
    occurs(&msg, "first-leak", 1);
    occurs(&msg, "second-leak", 1);
    occurs(&msg, "before-checkpoint", 0);
}

fn growth_foreign() {
    let other = host();
    let cp = other.observe().checkpoint();
    expect_err!(
        host().observe().growth_since(&cp),
        Error::InvalidParameter { .. },
        ["checkpoint", "of context"],
        ["use a checkpoint of the context"]
    );
}

fn check_foreign() {
    let other = host();
    let cp = other.observe().checkpoint();
    expect_err!(
        host().observe().check_no_growth(&cp),
        Error::InvalidParameter { .. },
        ["checkpoint", "of context"],
        ["use a checkpoint of the context"]
    );
}

#[cfg(feature = "trace-export")]
fn trace() -> vramkit::observe::Trace {
    let ctx = host();
    ctx.observe().start_trace(100);
    let h = alloc(&ctx, "traced", KIB);
    ctx.release(h).expect("release");
    ctx.observe().stop_trace().expect("a trace")
}

#[cfg(feature = "trace-export")]
fn json_missing_dir() {
    let path = "/nonexistent-vramkit-dir/sub/trace.json";
    expect_err!(
        trace().write_chrome_json(path),
        Error::Io { .. },
        [&format!("writing {path}")],
        []
    );
}

#[cfg(feature = "trace-export")]
fn json_empty_path() {
    expect_err!(
        trace().write_chrome_json(""),
        Error::Io { .. },
        ["writing"],
        []
    );
}

#[cfg(feature = "trace-export")]
fn svg_to_directory() {
    let dir = std::env::temp_dir();
    let shown = format!("writing {}", dir.display());
    expect_err!(trace().write_svg(&dir), Error::Io { .. }, [&shown], []);
}

#[cfg(feature = "trace-export")]
fn svg_zero() {
    expect_err!(
        trace().to_svg(0, 0),
        Error::InvalidParameter { .. },
        ["0x0"],
        ["at least 200"]
    );
}

/// A plot of 4 billion pixels square: SVG is vector, so a plot of that size (or a typed error
/// naming it), not an overflow or a hang.
#[cfg(feature = "trace-export")]
fn svg_huge() {
    match trace().to_svg(u32::MAX, u32::MAX) {
        Ok(svg) => assert!(
            svg.contains("width=\"4294967295\""),
            "WRONG ANSWER: the plot does not have the size asked for"
        ),
        Err(e) => crate::check::message(&e, &["4294967295"], &["at most"]),
    }
}
