//! Matmul on the GPU against the f64 CPU twin, both kernel variants, bands, and bad input.

#[path = "../../tests/common/mod.rs"]
mod common;
mod matmul_close;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Error};
use vramkit_kernels::{matmul, matmul_with, MatmulDims, MatmulKernel, TiledConfig};

gpu_tests!(
    every_kernel_matches_the_cpu_on_many_shapes,
    tiled_configs_match_the_cpu_on_edge_shapes,
    k_past_one_slice_adds_the_slices,
    a_larger_than_one_binding_runs_in_bands,
    bad_shapes_are_typed_errors,
);

/// The variants this backend runs: its own two kernels, and the vendor's BLAS where it has one.
fn kernels<B: Backend>(ctx: &Context<B>) -> Vec<MatmulKernel> {
    let mut v = vec![MatmulKernel::Register, MatmulKernel::Tiled];
    if ctx.backend().has_vendor_matmul() {
        v.push(MatmulKernel::Vendor);
    }
    v
}

fn random_matrix(len: usize, seed: u64) -> Vec<f32> {
    random_bytes(len * 4, seed)
        .chunks_exact(4)
        .map(|c| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >> 9) as f32 / 4_194_304.0 - 1.0)
        .collect()
}

fn check(c: &[f32], a: &[f32], b: &[f32], d: MatmulDims, what: &str) {
    matmul_close::assert_matmul_close(c, a, b, d, what);
}

fn run<B: Backend>(ctx: &Context<B>, d: MatmulDims, kernel: MatmulKernel, seed: u64) {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let a = random_matrix(m * k, seed);
    let b = random_matrix(k * n, seed + 1);
    let ha = ctx
        .alloc(AllocDesc::new("a", (m * k * 4) as u64))
        .expect("alloc");
    let hb = ctx
        .alloc(AllocDesc::new("b", (k * n * 4) as u64))
        .expect("alloc");
    // C sits in a larger buffer whose tail is poisoned: the kernel must not touch it.
    let tail = 4096;
    let hc = ctx
        .alloc(AllocDesc::new("c", (m * n * 4 + tail) as u64))
        .expect("alloc");
    ctx.upload(ha, bytemuck::cast_slice(&a)).expect("upload");
    ctx.upload(hb, bytemuck::cast_slice(&b)).expect("upload");
    ctx.upload(hc, &vec![0xA5; m * n * 4 + tail])
        .expect("upload");
    matmul_with(ctx, ha, hb, hc, d, kernel).expect("matmul");
    let out = ctx.download(hc).expect("download");
    assert!(
        out[m * n * 4..].iter().all(|&x| x == 0xA5),
        "{kernel:?} {d:?} wrote past C"
    );
    check(
        bytemuck::cast_slice(&out[..m * n * 4]),
        &a,
        &b,
        d,
        &format!("{kernel:?}"),
    );
    for h in [ha, hb, hc] {
        ctx.release(h).expect("release");
    }
}

const SHAPES: [(u32, u32, u32); 9] = [
    (1, 1, 1),
    (2, 3, 4),
    (17, 31, 13),
    (64, 64, 64),
    (127, 129, 65),
    (256, 1, 300),
    (1, 257, 33),
    (130, 200, 9),
    (1000, 1003, 517),
];

fn every_kernel_matches_the_cpu_on_many_shapes<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let mut all = kernels(&ctx);
    all.push(MatmulKernel::Auto);
    for kernel in all {
        for (i, &(m, n, k)) in SHAPES.iter().enumerate() {
            run(&ctx, MatmulDims { m, n, k }, kernel, i as u64 * 10);
        }
    }
}

/// Shapes for every edge path of the tiled kernel (128×128 tiles, chunks of 4 along K and N,
/// BK = 8 or 16 per step): M and N not multiples of 4 or 128, K below one step, not a multiple
/// of 4, one past a step, tall and skinny; the first five have N and K multiples of 4 (the vec4
/// kernel), with M, N and K ending inside a tile or a step.
const EDGE_SHAPES: [(u32, u32, u32); 21] = [
    (3, 4, 4),
    (1, 4, 12),
    (5, 12, 8),
    (129, 132, 20),
    (130, 260, 36),
    (1, 1, 1),
    (1, 1, 70),
    (3, 5, 3),
    (5, 3, 7),
    (9, 6, 8),
    (4, 4, 9),
    (7, 130, 15),
    (130, 7, 16),
    (33, 131, 17),
    (129, 129, 24),
    (128, 128, 128),
    (260, 259, 37),
    (513, 2, 40),
    (2, 515, 40),
    (255, 257, 6),
    (200, 300, 133),
];

fn tiled_configs_match_the_cpu_on_edge_shapes<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    for bk in [8, 16] {
        for (vec4, unroll) in [(true, false), (false, false), (true, true), (false, true)] {
            let kernel = MatmulKernel::TiledWith(TiledConfig { bk, vec4, unroll });
            for (i, &(m, n, k)) in EDGE_SHAPES.iter().enumerate() {
                run(&ctx, MatmulDims { m, n, k }, kernel, 500 + i as u64);
            }
        }
    }
    let [h, g, o] = ["h", "g", "o"].map(|l| ctx.alloc(AllocDesc::new(l, 64)).expect("alloc"));
    for bk in [0, 4, 12, 32] {
        let kernel = MatmulKernel::TiledWith(TiledConfig {
            bk,
            vec4: true,
            unroll: false,
        });
        match matmul_with(&ctx, h, g, o, MatmulDims { m: 2, n: 2, k: 2 }, kernel) {
            Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "TiledConfig::bk"),
            other => panic!("bk = {bk}: expected InvalidParameter, got {other:?}"),
        }
    }
    for x in [h, g, o] {
        ctx.release(x).expect("release");
    }
}

/// K past one launch's slice (32,768): the later slices add to C.
fn k_past_one_slice_adds_the_slices<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let mut all = kernels(&ctx);
    all.push(MatmulKernel::TiledWith(TiledConfig::default()));
    all.push(MatmulKernel::TiledWith(TiledConfig {
        unroll: true,
        ..TiledConfig::default()
    }));
    // K not a multiple of 4 (scalar loads), then a multiple (vec4 loads where N is one too).
    for (n, k) in [(5, 32_768 + 37), (8, 32_768 + 36)] {
        for &kernel in &all {
            run(&ctx, MatmulDims { m: 3, n, k }, kernel, 77);
        }
    }
}

fn a_larger_than_one_binding_runs_in_bands<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let max = ctx.backend().limits().max_binding_size;
    // A of m×k with m·k·4 just past the binding limit.
    let k = 4100u32;
    let m = (max / (4 * u64::from(k)) + 70) as u32;
    for kernel in kernels(&ctx) {
        run(&ctx, MatmulDims { m, n: 3, k }, kernel, 99);
    }
}

fn bad_shapes_are_typed_errors<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let [h, g, o] = ["h", "g", "o"].map(|l| ctx.alloc(AllocDesc::new(l, 64)).expect("alloc"));
    let zero = MatmulDims { m: 0, n: 4, k: 4 };
    assert!(matches!(
        matmul(&ctx, h, g, o, zero),
        Err(Error::ShapeMismatch { .. })
    ));
    let big = MatmulDims { m: 4, n: 4, k: 5 };
    match matmul(&ctx, h, g, o, big) {
        Err(Error::ShapeMismatch { expected, .. }) => assert!(expected.contains("A"), "{expected}"),
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    // Dimensions whose byte sizes pass 2⁶⁴: an error, in debug builds too.
    let huge = MatmulDims {
        m: u32::MAX,
        n: u32::MAX,
        k: u32::MAX,
    };
    assert!(matches!(
        matmul(&ctx, h, g, o, huge),
        Err(Error::ShapeMismatch { .. })
    ));
    // In place: C is A or B.
    let four = MatmulDims { m: 2, n: 2, k: 2 };
    for (a, b, c) in [(h, g, h), (h, g, g)] {
        match matmul(&ctx, a, b, c, four) {
            Err(Error::InvalidParameter { value, .. }) => {
                assert!(value.contains("same"), "{value}")
            }
            other => panic!("expected InvalidParameter, got {other:?}"),
        }
    }
    let one = MatmulDims { m: 1, n: 1, k: 1 };
    if !ctx.backend().has_vendor_matmul() {
        assert!(matches!(
            matmul_with(&ctx, h, g, o, one, MatmulKernel::Vendor),
            Err(Error::Unsupported { .. })
        ));
    }
    ctx.release(h).expect("release");
    assert!(matches!(
        matmul(&ctx, h, g, o, one),
        Err(Error::StaleHandle { .. })
    ));
    for x in [g, o] {
        ctx.release(x).expect("release");
    }
}
