//! The tiling planner (pure logic, no GPU) and tiled runs that must equal untiled ones byte for
//! byte while the memory manager's peak stays under the budget.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{ContextDesc, Error};
use vramkit_image::{format_chain, parse_chain, Op, Pipeline, PixelFormat, Rect};
use vramkit_kernels::image::ResizeFilter;

gpu_tests!(
    tiled_runs_equal_untiled_runs_within_the_budget,
    a_budget_below_the_minimum_says_what_would_work,
    the_report_counts_host_buffers,
    run_into_reuses_the_callers_output,
);

const CHAINS: [&str; 6] = [
    "linear,blur:sigma=2,resize:W2xH2,srgb",
    "box:radius=3,luma",
    "resize:W2xH2:area,adjust:brightness=0.1;contrast=1.2;gamma=2.2,blur:sigma=1.5",
    "blur:sigma=4,resize:W3xH3",
    // ceil(3 sigma) is 22 in f32 but 23 in the kernel's f64: the halo must be the kernel's.
    "blur:sigma=7.3333335,luma",
    // Likewise 20 in f32, 21 in f64 (541 seam pixels were once one level off).
    "blur:sigma=6.666667",
];

fn chain(s: &str, w: u32, h: u32) -> Pipeline {
    let s = s
        .replace("W2", &(w / 2).to_string())
        .replace("H2", &(h / 2).to_string())
        .replace("W3", &(w * 3 / 2).to_string())
        .replace("H3", &(h * 3 / 2).to_string());
    Pipeline::new(parse_chain(&s).expect("chain"), [w, h]).expect("pipeline")
}

#[test]
fn planner_covers_the_output_and_fits_the_budget() {
    for s in CHAINS {
        let p = chain(s, 3840, 2160);
        let [ow, oh] = p.output_size();
        let whole = p.tile_bytes(Rect::full(ow, oh));
        assert_eq!(
            p.plan(whole).expect("plan"),
            [ow, oh],
            "{s}: the whole frame fits"
        );
        for div in [2, 8, 64] {
            let tile = p.plan(whole / div).expect("plan");
            let tiles = p.tiles(tile);
            assert!(tiles.len() > 1, "{s}: 1/{div} of the budget must tile");
            // Every output pixel is in exactly one tile, and every tile fits.
            let covered: u64 = tiles.iter().map(|t| t.area()).sum();
            assert_eq!(covered, u64::from(ow) * u64::from(oh));
            for t in &tiles {
                assert!(
                    p.tile_bytes(*t) <= whole / div,
                    "{s}: tile {t:?} passes the plan"
                );
                let regions = p.regions(*t);
                assert_eq!(regions[regions.len() - 1], *t);
            }
        }
        match p.plan(1000) {
            Err(Error::OverBudget { requested, .. }) => assert!(requested > 1000),
            other => panic!("{s}: expected OverBudget, got {other:?}"),
        }
    }
    // Halos: a blur's input region is its output region grown by the radius, clamped.
    let p = chain("blur:sigma=2", 100, 100);
    let r = p.regions(Rect {
        x0: 10,
        y0: 0,
        x1: 20,
        y1: 5,
    });
    assert_eq!(
        r[0],
        Rect {
            x0: 4,
            y0: 0,
            x1: 26,
            y1: 11
        }
    );
}

#[test]
fn bad_chains_are_typed_errors() {
    for s in [
        "",
        "blur",
        "blur:sigma=-1",
        "resize:10",
        "resize:0x5",
        "sharpen",
        "adjust:gamma=0",
        "box:radius=0",
    ] {
        assert!(
            matches!(parse_chain(s), Err(Error::InvalidParameter { .. })),
            "{s:?}"
        );
    }
}

fn tiled_runs_equal_untiled_runs_within_the_budget<B: Backend>(mk: Mk<B>) {
    let whole_ctx = mk(ContextDesc::default());
    for (i, s) in CHAINS.iter().enumerate() {
        for (w, h, format) in [
            (301u32, 187u32, PixelFormat::Rgba32F),
            (256, 160, PixelFormat::Rgba8),
        ] {
            let p = chain(s, w, h).with_working_format(format);
            let input = random_bytes((w * h * 4) as usize, i as u64 + u64::from(w));
            let (whole, report) = p.run(&whole_ctx, &input).expect("untiled");
            assert_eq!(report.tiles, 1, "{s}: no budget, one tile");
            let [ow, oh] = p.output_size();
            let budget = p.tile_bytes(Rect::full(ow, oh)) / 8;
            let desc = ContextDesc {
                budget: Some(budget + (256 << 10)),
                staging_chunk: 64 << 10,
                staging_slots: 2,
                ..Default::default()
            };
            let ctx = mk(desc);
            let (tiled, report) = p.run(&ctx, &input).expect("tiled");
            assert!(
                report.tiles > 1,
                "{s} {w}×{h}: 1/8 of the working set must tile"
            );
            assert!(
                tiled == whole,
                "{s} {w}×{h}: tiled output differs from untiled"
            );
            let stats = ctx.stats();
            assert!(
                stats.peak_reserved <= budget + (256 << 10),
                "{s}: peak {} passed the budget",
                stats.peak_reserved
            );
            assert_eq!(stats.live, 0, "{s}: the run leaked");
        }
    }
}

fn a_budget_below_the_minimum_says_what_would_work<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(200 << 10),
        staging_chunk: 64 << 10,
        staging_slots: 1,
        ..Default::default()
    });
    let p = chain("blur:sigma=8", 200, 200);
    match p.run(&ctx, &vec![0u8; 200 * 200 * 4]) {
        Err(Error::OverBudget {
            requested, limit, ..
        }) => {
            assert_eq!(limit, 200 << 10);
            assert!(
                requested > limit,
                "the minimum {requested} must exceed the budget"
            );
        }
        other => panic!("expected OverBudget, got {other:?}"),
    }
    assert!(matches!(
        p.run(&ctx, &[0u8; 7]),
        Err(Error::ShapeMismatch { .. })
    ));
}

/// Asserts `r` is `Error::InvalidParameter` named `name` whose message holds every one of
/// `needles`.
fn assert_invalid<T: std::fmt::Debug>(
    r: vramkit::Result<T>,
    name: &str,
    needles: &[&str],
    what: &str,
) {
    match r {
        Err(e @ Error::InvalidParameter { name: n, .. }) => {
            let msg = e.to_string();
            assert_eq!(n, name, "{what}: {msg}");
            for needle in needles {
                assert!(
                    msg.contains(needle),
                    "{what}: `{msg}` does not name {needle:?}"
                );
            }
        }
        other => panic!("{what}: expected InvalidParameter `{name}`, got {other:?}"),
    }
}

fn resize(width: u32, height: u32) -> Op {
    Op::Resize {
        width,
        height,
        filter: ResizeFilter::Bilinear,
    }
}

#[test]
fn strict_parsing_names_the_offending_token_and_what_is_accepted() {
    #[rustfmt::skip]
    let cases: &[(&str, &str, &[&str])] = &[
        ("", "operation chain", &["empty", "at least one operation"]),
        (" ", "operation chain", &["empty"]),
        ("linear,,srgb", "operation chain", &["`linear,,srgb`", "single commas"]),
        ("linear,", "operation chain", &["trailing comma"]),
        ("sharpen", "operation", &["`sharpen`", "known operations", "blur:sigma=S"]),
        ("Linear", "operation", &["`Linear`", "known operations"]),
        (":srgb", "operation", &["`:srgb`", "known operations"]),
        ("linear:foo=1", "operation argument", &["`foo=1` in `linear:foo=1`", "no arguments"]),
        ("srgb:", "operation argument", &["`srgb:`", "no arguments"]),
        ("blur", "operation", &["`blur`", "sigma=S"]),
        ("blur:", "parameter", &["`blur:`", "sigma=S"]),
        ("blur:sigma", "parameter", &["`sigma` in `blur:sigma`", "sigma=S"]),
        ("blur:sigma=", "parameter", &["`sigma=` in `blur:sigma=`", "value is expected"]),
        ("blur:radius=3", "parameter", &["`radius` in `blur:radius=3`", "blur takes"]),
        ("blur:sigma=1;sigma=2", "parameter", &["`sigma`", "twice"]),
        ("blur:sigma=1:sigma=1", "parameter", &["`sigma`", "twice"]),
    ];
    for &(text, name, needles) in cases {
        assert_invalid(parse_chain(text), name, needles, text);
    }
    // `resize:10x` has no `=`: the message must not ask for a number after one.
    let msg = parse_chain("resize:10x")
        .expect_err("malformed")
        .to_string();
    assert!(!msg.contains("after `=`"), "{msg}");
}

#[test]
fn valid_chains_parse_and_write_back() {
    for (text, canonical) in [
        ("linear", "linear"),
        (
            " linear , blur: sigma = 3 ,srgb ",
            "linear,blur:sigma=3,srgb",
        ),
        ("resize:1920x1080:bilinear", "resize:1920x1080"),
        ("resize:640x480:area", "resize:640x480:area"),
        ("resize:65536x16384", "resize:65536x16384"),
        ("adjust", "adjust:brightness=0;contrast=1;gamma=1"),
        (
            "adjust:gamma=2.2:brightness=-0.1",
            "adjust:brightness=-0.1;contrast=1;gamma=2.2",
        ),
        ("box:radius=1024,luma", "box:radius=1024,luma"),
        ("blur:sigma=341", "blur:sigma=341"),
    ] {
        let ops = parse_chain(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(format_chain(&ops), canonical, "{text}");
        assert_eq!(parse_chain(canonical).expect("canonical"), ops, "{text}");
    }
}

#[test]
fn huge_resizes_are_refused_at_construction() {
    // `resize:100000x100000` used to pass `Pipeline::new` and abort `run` allocating 40 GB.
    let r = Pipeline::new(vec![resize(100_000, 100_000)], [64, 64]);
    assert_invalid(
        r,
        "resize width",
        &["`resize:100000x100000`", "65536"],
        "100000²",
    );
    let r = Pipeline::new(vec![Op::Linear, resize(60_000, 60_000)], [64, 64]);
    assert_invalid(r, "resize size", &["60000x60000", "1073741824"], "60000²");
    let r = Pipeline::new(vec![resize(u32::MAX, 1)], [64, 64]);
    assert_invalid(r, "resize width", &["4294967295", "65536"], "u32::MAX");
    // The input frame is held to the same limits.
    let r = Pipeline::new(vec![Op::Linear], [70_000, 10]);
    assert_invalid(r, "input width", &["70000x10", "65536"], "wide input");
    let r = Pipeline::new(vec![Op::Linear], [40_000, 40_000]);
    assert_invalid(
        r,
        "input size",
        &["40000x40000", "1073741824"],
        "large input",
    );
    // The largest frame the limits allow is planned without overflow.
    let p = Pipeline::new(vec![resize(32_768, 32_768)], [65_536, 16_384]).expect("at the limits");
    assert_eq!(p.output_size(), [32_768, 32_768]);
    assert!(p.plan(256 << 20).is_ok());
}

#[test]
fn a_resize_to_nothing_is_a_typed_error() {
    // `resize` to 0×0 used to panic in `step_by(0)`.
    let r = Pipeline::new(vec![resize(0, 0)], [8, 8]);
    assert_invalid(r, "resize width", &["`resize:0x0`", "1 to 65536"], "0×0");
    let r = Pipeline::new(vec![Op::Linear, resize(5, 0)], [8, 8]);
    assert_invalid(r, "resize height", &["`resize:5x0`"], "5×0");
    // Ops made in code are checked as the parser checks them.
    let bad: [(Op, &str, &str); 6] = [
        (Op::Blur { sigma: f32::NAN }, "sigma", "`blur:sigma=NaN`"),
        (Op::Blur { sigma: 1e30 }, "sigma", "blur:sigma="),
        (Op::BoxBlur { radius: 0 }, "radius", "`box:radius=0`"),
        (
            Op::Adjust {
                brightness: f32::INFINITY,
                contrast: 1.0,
                gamma: 1.0,
            },
            "brightness",
            "brightness=inf",
        ),
        (
            Op::Adjust {
                brightness: 0.0,
                contrast: f32::NAN,
                gamma: 1.0,
            },
            "contrast",
            "contrast=NaN",
        ),
        (
            Op::Adjust {
                brightness: 0.0,
                contrast: 1.0,
                gamma: -1.0,
            },
            "gamma",
            "gamma=-1",
        ),
    ];
    for (op, name, needle) in bad {
        assert_invalid(
            Pipeline::new(vec![op], [8, 8]),
            name,
            &[needle],
            &format!("{op:?}"),
        );
    }
    // Tiles of a side 0 cover the output instead of panicking.
    let p = chain("linear", 5, 3);
    assert_eq!(p.tiles([0, 0]).len(), 15);
    assert_eq!(p.tiles([0, 2]).len(), 10);
}

fn the_report_counts_host_buffers<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let p = chain("linear,resize:W2xH2,srgb", 64, 40);
    let input = random_bytes(64 * 40 * 4, 9);
    let (out, report) = p.run(&ctx, &input).expect("run");
    assert_eq!(out.len(), 32 * 20 * 4);
    // Untiled: the output frame alone (the input uploads from the caller's frame and the
    // output downloads into the returned one, no copies between).
    assert_eq!(report.tiles, 1);
    assert_eq!(report.host_bytes, out.len() as u64, "{report:?}");
    // Tiled: the output frame, and one tile's input and output copies.
    let p = chain("linear,resize:W2xH2,srgb", 256, 160);
    let input = random_bytes(256 * 160 * 4, 10);
    let (out, _) = p.run(&ctx, &input).expect("run");
    let tight = mk(ContextDesc {
        budget: Some(p.tile_bytes(Rect::full(128, 80)) / 8 + (256 << 10)),
        staging_chunk: 64 << 10,
        staging_slots: 2,
        ..Default::default()
    });
    let (tiled, report) = p.run(&tight, &input).expect("tiled run");
    assert!(report.tiles > 1, "{report:?}");
    assert!(tiled == out, "tiled != untiled");
    let copies = report.host_bytes - out.len() as u64;
    assert!(
        copies > 0 && copies < (out.len() + input.len()) as u64,
        "{report:?}"
    );
}

fn run_into_reuses_the_callers_output<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let p = chain("linear,blur:sigma=2,resize:W2xH2,srgb", 64, 40);
    let mut out = vec![7u8; 32 * 20 * 4];
    for seed in [11, 12] {
        let input = random_bytes(64 * 40 * 4, seed);
        let (want, _) = p.run(&ctx, &input).expect("run");
        let report = p.run_into(&ctx, &input, &mut out).expect("run_into");
        assert!(out == want, "run_into != run (seed {seed})");
        assert_eq!(report.tiles, 1);
    }
    // Tiled into the caller's frame too.
    let tight = mk(ContextDesc {
        budget: Some(p.tile_bytes(Rect::full(32, 20)) / 8 * 7 + (256 << 10)),
        staging_chunk: 64 << 10,
        staging_slots: 2,
        ..Default::default()
    });
    let input = random_bytes(64 * 40 * 4, 13);
    let (want, _) = p.run(&ctx, &input).expect("run");
    out.fill(0);
    let report = p
        .run_into(&tight, &input, &mut out)
        .expect("tiled run_into");
    assert!(report.tiles > 1, "{report:?}");
    assert!(out == want, "tiled run_into != run");
    // An output of the wrong size is refused before anything runs, and named.
    let mut short = vec![0u8; out.len() - 4];
    match p.run_into(&ctx, &input, &mut short) {
        Err(Error::ShapeMismatch { expected, actual }) => {
            assert!(expected.contains("32×20") && actual.contains(&short.len().to_string()));
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    let mut out16 = vec![0u16; 32 * 20 * 4];
    let input16: Vec<u16> = input.iter().map(|&b| u16::from(b) * 257).collect();
    let (want16, _) = p.run_rgba16(&ctx, &input16).expect("run_rgba16");
    p.run_rgba16_into(&ctx, &input16, &mut out16)
        .expect("run_rgba16_into");
    assert!(out16 == want16, "run_rgba16_into != run_rgba16");
}

#[test]
fn tiles_keep_each_buffer_within_the_devices_largest_binding() {
    let p = chain("blur:sigma=2,resize:W2xH2", 1024, 1024);
    let max = 1 << 20;
    let tile = p.plan_within(u64::MAX, max).expect("plan");
    assert!(tile != [512, 512], "a 1 MiB binding must tile");
    for t in p.tiles(tile) {
        assert!(p.largest_buffer(t) <= max, "{t:?}");
    }
    // Averaging 4096² pixels into one: even a 1×1 tile reads more than a binding holds.
    let p = parse_chain("resize:1x1:area").expect("chain");
    let p = Pipeline::new(p, [4096, 4096]).expect("pipeline");
    match p.plan_within(u64::MAX, 128 << 20) {
        Err(e @ Error::TooLarge { requested, max, .. }) => {
            assert!(requested > max);
            let msg = e.to_string();
            assert!(
                msg.contains("binding") && msg.contains("larger output size"),
                "{msg}"
            );
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}
