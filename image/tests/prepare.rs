//! `Pipeline::prepare` builds, all at once, exactly the kernels a run launches: as many as a
//! run on a fresh context builds, after it a run of the same pipeline builds none (the
//! backends log each build), and that run gives the bytes of the run that never prepared.

#[path = "../../tests/common/builds.rs"]
mod builds;
#[path = "../../tests/common/mod.rs"]
mod common;

use builds::{count, one_at_a_time};
use common::{budget_desc, random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{Context, ContextDesc};
use vramkit_image::{parse_chain, Pipeline, PixelFormat};

gpu_tests!(a_prepared_run_builds_no_kernel);

/// Runs `p` on a frame of its input size, 8-bit or 16-bit: the output's bytes and the tiles.
fn run<B: Backend>(ctx: &Context<B>, p: &Pipeline, wide: bool, seed: u64) -> (Vec<u8>, usize) {
    let [w, h] = p.input_size();
    let bytes = random_bytes((w * h * 4) as usize * if wide { 2 } else { 1 }, seed);
    if wide {
        let frame: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        let (out, report) = p.run_rgba16(ctx, &frame).expect("run 16-bit");
        (
            out.iter().flat_map(|v| v.to_le_bytes()).collect(),
            report.tiles,
        )
    } else {
        let (out, report) = p.run(ctx, &bytes).expect("run");
        (out, report.tiles)
    }
}

fn a_prepared_run_builds_no_kernel<B: Backend>(mk: Mk<B>) {
    let (w, h) = (96u32, 64u32);
    let default = "linear,blur:sigma=3,resize:48x32:area,srgb";
    // (chain, working format, 16-bit frames, budget)
    let cases = [
        // The tool's default chain: fused ends (and in RGBA8, blur + area halving fused).
        (default, PixelFormat::Rgba32F, false, None),
        (default, PixelFormat::Rgba8, false, None),
        (default, PixelFormat::Rgba32F, true, None),
        // Tiles of a frame that does not fit the budget.
        (default, PixelFormat::Rgba32F, false, Some(768 << 10)),
        (
            "luma,box:radius=2,resize:40x30,adjust:contrast=1.2",
            PixelFormat::Rgba32F,
            false,
            None,
        ),
        ("blur:sigma=1.5,srgb", PixelFormat::Rgba8, false, None),
        ("resize:50x30", PixelFormat::Rgba8, false, None),
    ];
    for (chain, working, wide, budget) in cases {
        let _one = one_at_a_time();
        let p = Pipeline::new(parse_chain(chain).expect("chain"), [w, h])
            .expect("pipeline")
            .with_working_format(working);
        let what = format!("{chain} ({working:?}, 16-bit {wide}, budget {budget:?})");
        let desc = || budget.map_or_else(ContextDesc::default, budget_desc);
        let fresh = mk(desc());
        let before = count();
        let (want, tiles) = run(&fresh, &p, wide, 5);
        assert_eq!(tiles > 1, budget.is_some(), "{what}: {tiles} tile(s)");
        let run_builds = count() - before;
        let ctx = mk(desc());
        let before = count();
        if wide {
            p.prepare_rgba16(&ctx).expect("prepare 16-bit");
        } else {
            p.prepare(&ctx).expect("prepare");
        }
        let prepared = count() - before;
        assert_eq!(
            prepared, run_builds,
            "{what}: prepare built other kernels than a run"
        );
        let (got, _) = run(&ctx, &p, wide, 5);
        assert_eq!(
            count() - before,
            prepared,
            "{what}: the run built kernels prepare did not"
        );
        assert_eq!(got, want, "{what}: a prepared run gives other bytes");
    }
}
