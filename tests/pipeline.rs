//! The tiling planner (pure logic, no GPU) and tiled runs that must equal untiled ones byte for
//! byte while the memory manager's peak stays under the budget.

mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::image::{parse_chain, Pipeline, PixelFormat, Rect};
use vramkit::{ContextDesc, Error};

gpu_tests!(
    tiled_runs_equal_untiled_runs_within_the_budget,
    a_budget_below_the_minimum_says_what_would_work,
);

const CHAINS: [&str; 4] = [
    "linear,blur:sigma=2,resize:W2xH2,srgb",
    "box:radius=3,luma",
    "resize:W2xH2:area,adjust:brightness=0.1;contrast=1.2;gamma=2.2,blur:sigma=1.5",
    "blur:sigma=4,resize:W3xH3",
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
