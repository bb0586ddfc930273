//! Frames whose stages pass the device's largest binding (128 MiB on lavapipe) tile to fit it
//! whatever the budget (an 18 MP photo, DCI 4K in RGBA32F and a 4K → 5000×3000
//! upscale failed with no budget or 300 MiB–2 GiB, and worked only at 256 MiB), and so do
//! thumbnails of big photos, whose every output pixel reads a large region (tiles below 16×16).
//! The planner is checked at every budget; an upscale and a thumbnail are run for real, the
//! thumbnail against the CPU twin.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Pipeline, PixelFormat};

gpu_tests!(
    a_4k_upscale_past_the_binding_runs_in_tiles,
    a_thumbnail_of_a_big_frame_matches_the_cpu
);

/// lavapipe's largest storage binding.
const BINDING: u64 = 128 << 20;

/// The tool's default chain on an 18 MP photo and on DCI 4K, a 4K upscale to 5000×3000, and
/// thumbnails of a 48 MP photo and of DCI 4K.
const CASES: [(&str, [u32; 2]); 5] = [
    (
        "linear,blur:sigma=3,resize:1920x1080:area,srgb",
        [5640, 3172],
    ),
    (
        "linear,blur:sigma=3,resize:1920x1080:area,srgb",
        [4096, 2160],
    ),
    ("resize:5000x3000", [3840, 2160]),
    ("linear,resize:32x24:area,srgb", [8000, 6000]),
    ("resize:16x9:area", [4096, 2160]),
];

fn pipeline(ops: &str, size: [u32; 2]) -> Pipeline {
    Pipeline::new(parse_chain(ops).expect("chain"), size)
        .expect("pipeline")
        .with_working_format(PixelFormat::Rgba32F)
}

#[test]
fn every_budget_plans_tiles_within_the_largest_binding() {
    for (ops, size) in CASES {
        let p = pipeline(ops, size);
        for budget in [u64::MAX, 300 << 20, 1 << 30, 2 << 30] {
            let tile = p
                .plan_within(budget, BINDING)
                .unwrap_or_else(|e| panic!("{ops} on {size:?}, budget {budget}: {e}"));
            let tiles = p.tiles(tile);
            assert!(
                tiles.len() > 1,
                "{ops} on {size:?}: one binding can't hold it"
            );
            for t in tiles {
                assert!(p.largest_buffer(t) <= BINDING, "{ops} {size:?}: {t:?}");
                assert!(p.tile_bytes(t) <= budget, "{ops} {size:?}: {t:?}");
            }
        }
    }
}

fn a_4k_upscale_past_the_binding_runs_in_tiles<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let max = {
        let l = ctx.backend().limits();
        l.max_binding_size.min(l.max_block_size)
    };
    let (ops, size) = CASES[2];
    let p = pipeline(ops, size);
    let input = random_bytes((size[0] * size[1] * 4) as usize, 12);
    let (out, report) = p
        .run(&ctx, &input)
        .expect("a 4K upscale within the binding limit");
    assert_eq!(out.len(), 5000 * 3000 * 4);
    // 5000×3000 RGBA32F is 240 MB: past a 128 MiB binding it must tile.
    if max < 5000 * 3000 * 16 {
        assert!(report.tiles > 1, "{report:?}");
    }
    for t in p.tiles(report.tile) {
        assert!(p.largest_buffer(t) <= max, "{t:?}");
    }
    // The corners are the input's (a bilinear upscale with centres aligned clamps there).
    let [w, h] = size;
    let corners = [(0, 0, 0, 0), (w - 1, h - 1, 4999, 2999)];
    for (x, y, ox, oy) in corners {
        let i = ((y * w + x) * 4) as usize;
        let o = ((oy * 5000 + ox) * 4) as usize;
        assert_eq!(input[i + 3], out[o + 3], "alpha at ({ox}, {oy})");
    }
    assert_eq!(ctx.stats().live, 0, "the run leaked");
}

fn a_thumbnail_of_a_big_frame_matches_the_cpu<B: Backend>(mk: Mk<B>) {
    use vramkit_kernels::image::ResizeFilter;
    use vramkit_kernels::image_cpu::{pack_rgba8_cpu, resize_cpu, unpack_rgba8_cpu};
    let ctx = mk(ContextDesc::default());
    let (ops, size) = CASES[4];
    let p = pipeline(ops, size);
    let input = random_bytes((size[0] * size[1] * 4) as usize, 14);
    let (out, report) = p.run(&ctx, &input).expect("a 4096×2160 → 16×9 thumbnail");
    eprintln!("{} tiles of {:?}", report.tiles, report.tile);
    let words: Vec<u32> = input
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let want = pack_rgba8_cpu(&resize_cpu(
        &unpack_rgba8_cpu(&words),
        size[0],
        size[1],
        16,
        9,
        ResizeFilter::Area,
    ));
    let want: Vec<u8> = want.iter().flat_map(|w| w.to_le_bytes()).collect();
    let worst = out
        .iter()
        .zip(&want)
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap_or(0);
    assert!(worst <= 1, "{worst} levels from the CPU twin");
    assert_eq!(ctx.stats().live, 0, "the run leaked");
}
