//! The f16 matmul (`matmul_typed` with `MatmulDtype::F16`) on the GPU against its f64 CPU twin,
//! within the stated bound (`matmul_f16_bound`): every kernel this backend runs, awkward shapes,
//! K slices, large values, and the choice of kernel — on an adapter that lists 16×16×16
//! f16→f32 cooperative matrices, `Auto` must run the cooperative kernel.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::Mk;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Error};
use vramkit_kernels::{
    f32_to_f16_bits, matmul_f16_bound, matmul_f16_cpu, matmul_f16_kernel, matmul_typed, CoopTile,
    MatmulDims, MatmulDtype, MatmulKernel,
};

gpu_tests!(
    every_f16_kernel_matches_the_cpu_on_many_shapes,
    large_values_and_long_k_stay_within_the_bound,
    an_a_larger_than_one_binding_runs_in_bands,
    auto_picks_the_cooperative_kernel_where_the_adapter_has_one,
    bad_f16_input_is_a_typed_error,
);

/// The f16 kernels this backend runs: the fallback, cuBLAS where present, the cooperative
/// kernel in each block shape where the adapter lists it.
fn kernels<B: Backend>(ctx: &Context<B>) -> Vec<MatmulKernel> {
    let mut v = vec![MatmulKernel::Tiled];
    for k in [MatmulKernel::Vendor, MatmulKernel::Cooperative] {
        if matmul_f16_kernel(ctx, k).is_ok() {
            v.push(k);
        }
    }
    if v.contains(&MatmulKernel::Cooperative) {
        v.extend(
            CoopTile::ALL[1..]
                .iter()
                .map(|&t| MatmulKernel::CooperativeWith(t)),
        );
    }
    v
}

/// Random f16 values in (−scale, scale), as bit patterns, from SplitMix64 (cheap enough for
/// the 67-million-value band test in a debug build).
fn random_f16(len: usize, seed: u64, scale: f32) -> Vec<u16> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let u = ((z ^ (z >> 31)) >> 40) as f32 / 16_777_216.0;
            f32_to_f16_bits((2.0 * u - 1.0) * scale)
        })
        .collect()
}

fn run<B: Backend>(ctx: &Context<B>, d: MatmulDims, kernel: MatmulKernel, seed: u64, scale: f32) {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let a = random_f16(m * k, seed, scale);
    let b = random_f16(k * n, seed + 1, scale);
    // A and B are allocated to their exact (possibly odd) byte sizes.
    let ha = ctx
        .alloc(AllocDesc::new("a", (m * k * 2) as u64))
        .expect("alloc");
    let hb = ctx
        .alloc(AllocDesc::new("b", (k * n * 2) as u64))
        .expect("alloc");
    // C sits in a larger buffer whose tail is poisoned: the kernel must not touch it.
    let tail = 4096;
    let hc = ctx
        .alloc(AllocDesc::new("c", (m * n * 4 + tail) as u64))
        .expect("alloc");
    let bytes = |v: &[u16]| v.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<u8>>();
    ctx.upload(ha, &bytes(&a)).expect("upload");
    ctx.upload(hb, &bytes(&b)).expect("upload");
    ctx.upload(hc, &vec![0xA5; m * n * 4 + tail])
        .expect("upload");
    matmul_typed(ctx, ha, hb, hc, d, MatmulDtype::F16, kernel).expect("matmul");
    let out = ctx.download(hc).expect("download");
    assert!(
        out[m * n * 4..].iter().all(|&x| x == 0xA5),
        "{kernel:?} {d:?} wrote past C"
    );
    let got: &[f32] = bytemuck::cast_slice(&out[..m * n * 4]);
    let want = matmul_f16_cpu(&a, &b, d);
    let bound = matmul_f16_bound(&a, &b, d);
    for (idx, ((&g, &w), &tol)) in got.iter().zip(&want).zip(&bound).enumerate() {
        // The twin rounded the exact sum once to f32: half an ulp of it more.
        let tol = tol + f64::from(w.abs()) * 2f64.powi(-24);
        assert!(
            (f64::from(g) - f64::from(w)).abs() <= tol,
            "{kernel:?} {d:?}: C[{}][{}] = {g}, expected {w} (bound {tol:e})",
            idx / n,
            idx % n
        );
    }
    for h in [ha, hb, hc] {
        ctx.release(h).expect("release");
    }
}

/// Not multiples of 16 or of the tiles, K = 1, odd K and N (halves that straddle words), tall
/// and skinny, wide and short; K and N multiples of 8 with edges elsewhere (the cooperative
/// kernel's 16-byte loader).
const SHAPES: [(u32, u32, u32); 14] = [
    (1, 1, 1),
    (2, 3, 4),
    (17, 31, 13),
    (64, 64, 64),
    (127, 129, 65),
    (256, 1, 300),
    (1, 257, 33),
    (130, 200, 1),
    (300, 5, 7),
    (3, 300, 130),
    (200, 260, 517),
    (136, 264, 40),
    // K and N multiples of 8 (the 64×64-per-subgroup cooperative kernels), edges on all sides.
    (300, 520, 200),
    (257, 136, 72),
];

fn every_f16_kernel_matches_the_cpu_on_many_shapes<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let mut all = kernels(&ctx);
    all.push(MatmulKernel::Auto);
    all.push(MatmulKernel::Register);
    println!(
        "f16 matmul on {}: kernels {all:?}, Auto runs {:?}",
        ctx.adapter_info(),
        matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("auto")
    );
    for kernel in all {
        for (i, &(m, n, k)) in SHAPES.iter().enumerate() {
            run(&ctx, MatmulDims { m, n, k }, kernel, i as u64 * 10, 2.0);
        }
    }
}

/// Values up to ±60,000 (products near 2³²), and K past one slice of 32,768 (a second launch
/// adds to C), with an odd K.
fn large_values_and_long_k_stay_within_the_bound<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    for kernel in kernels(&ctx) {
        run(
            &ctx,
            MatmulDims {
                m: 33,
                n: 40,
                k: 70,
            },
            kernel,
            5,
            60_000.0,
        );
        run(
            &ctx,
            MatmulDims {
                m: 5,
                n: 18,
                k: 32_771,
            },
            kernel,
            6,
            1.0,
        );
        // K and N multiples of 8, K past one slice.
        run(
            &ctx,
            MatmulDims {
                m: 40,
                n: 24,
                k: 32_776,
            },
            kernel,
            7,
            1.0,
        );
    }
}

/// A of m×k halves just past the largest binding (or 2³¹ bytes, the f16 kernels' own limit):
/// A and C go in bands of rows.
fn an_a_larger_than_one_binding_runs_in_bands<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let max = ctx.backend().limits().max_binding_size.min(1 << 31);
    let k = 4100u32;
    let m = (max / (2 * u64::from(k)) + 70) as u32;
    // N = 1 runs every cooperative block shape on the 128×128 kernel: once is enough.
    let shaped = |k: &MatmulKernel| matches!(k, MatmulKernel::CooperativeWith(_));
    for kernel in kernels(&ctx).into_iter().filter(|k| !shaped(k)) {
        run(&ctx, MatmulDims { m, n: 1, k }, kernel, 99, 1.0);
    }
}

/// Where the backend was opened with 16×16×16 f16×f16→f32 cooperative matrices (wgpu, not
/// CUDA: there cuBLAS comes first), `Auto` resolves to the cooperative kernel, which runs
/// right; the test says which kernel ran. (That the wgpu backend opens them wherever the
/// adapter offers them is `a_wgpu_adapter_listing_f16_cooperative_matrices_runs_them`.)
fn auto_picks_the_cooperative_kernel_where_the_adapter_has_one<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let listed: Vec<_> = ctx
        .backend()
        .cooperative_matrices()
        .iter()
        .filter(|p| {
            (p.m, p.n, p.k) == (16, 16, 16)
                && p.inputs == vramkit::backend::CooperativeScalar::F16
                && p.accumulator == vramkit::backend::CooperativeScalar::F32
        })
        .copied()
        .collect();
    let auto = matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("auto");
    println!(
        "{}: cooperative f16 configurations {listed:?}; Auto runs {auto:?}",
        ctx.adapter_info()
    );
    let expected = if ctx.backend().has_vendor_matmul() {
        MatmulKernel::Vendor
    } else if listed.is_empty() {
        MatmulKernel::Tiled
    } else {
        MatmulKernel::Cooperative
    };
    assert_eq!(auto, expected);
    if listed.is_empty() {
        assert!(matches!(
            matmul_f16_kernel(&ctx, MatmulKernel::Cooperative),
            Err(Error::Unsupported { .. })
        ));
    } else {
        // The kernel Auto chose runs and is right on a shape with edges on every side.
        run(
            &ctx,
            MatmulDims {
                m: 300,
                n: 270,
                k: 100,
            },
            auto,
            77,
            1.0,
        );
    }
}

/// On wgpu, from the adapter's own lists (not vramkit's): where it offers the features the
/// cooperative kernel needs, subgroups of exactly 32 and a 16×16×16 f16×f16→f32 cooperative
/// matrix, `Auto` must run the cooperative kernel. `VRAMKIT_EXPECT_COOPERATIVE=1` (set on the
/// H200) fails the test where the adapter does not list one, so it cannot pass silently there.
#[test]
fn a_wgpu_adapter_listing_f16_cooperative_matrices_runs_them() {
    let Some(ctx) = common::try_gpu("a_wgpu_adapter_listing_f16", ContextDesc::default()) else {
        return;
    };
    let adapter = ctx.backend().adapter();
    let info = adapter.get_info();
    let listed = adapter.cooperative_matrix_properties();
    let needed = vramkit::wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | vramkit::wgpu::Features::SHADER_F16
        | vramkit::wgpu::Features::SUBGROUP;
    let f16 = listed.iter().any(|p| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
            && p.ab_type == vramkit::wgpu::CooperativeScalarType::F16
            && p.cr_type == vramkit::wgpu::CooperativeScalarType::F32
    });
    let usable = f16
        && adapter.features().contains(needed)
        && (info.subgroup_min_size, info.subgroup_max_size) == (32, 32)
        && !ctx.observe().debug_settings().no_cooperative_matrix;
    let auto = matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("auto");
    println!(
        "{}: lists {listed:?}; features {:?}; subgroups {}..{}; Auto runs {auto:?}",
        info.name,
        adapter.features() & needed,
        info.subgroup_min_size,
        info.subgroup_max_size
    );
    if std::env::var("VRAMKIT_EXPECT_COOPERATIVE").is_ok_and(|v| v == "1") {
        assert!(
            usable,
            "VRAMKIT_EXPECT_COOPERATIVE=1 but `{}` offers no usable 16×16×16 f16→f32 \
             cooperative matrix",
            info.name
        );
    }
    let expected = if usable {
        MatmulKernel::Cooperative
    } else {
        MatmulKernel::Tiled
    };
    assert_eq!(auto, expected, "{}", info.name);
}

fn bad_f16_input_is_a_typed_error<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let [h, g, o] = ["h", "g", "o"].map(|l| ctx.alloc(AllocDesc::new(l, 64)).expect("alloc"));
    let f16 = MatmulDtype::F16;
    let auto = MatmulKernel::Auto;
    let zero = MatmulDims { m: 0, n: 4, k: 4 };
    assert!(matches!(
        matmul_typed(&ctx, h, g, o, zero, f16, auto),
        Err(Error::ShapeMismatch { .. })
    ));
    // 64 bytes hold 32 halves: A of 4×8 fits, 4×9 does not; C of 4×4 f32 fits, 4×5 does not.
    let fits = MatmulDims { m: 4, n: 4, k: 8 };
    matmul_typed(&ctx, h, g, o, fits, f16, auto).expect("A, B and C fit");
    for (d, what) in [
        (MatmulDims { m: 4, n: 4, k: 9 }, "A"),
        (MatmulDims { m: 5, n: 4, k: 6 }, "C"),
        (MatmulDims { m: 1, n: 33, k: 1 }, "B"),
    ] {
        match matmul_typed(&ctx, h, g, o, d, f16, auto) {
            Err(Error::ShapeMismatch { expected, .. }) => {
                assert!(expected.starts_with(what), "{d:?}: {expected}")
            }
            other => panic!("{d:?}: expected ShapeMismatch on {what}, got {other:?}"),
        }
    }
    let huge = MatmulDims {
        m: u32::MAX,
        n: u32::MAX,
        k: u32::MAX,
    };
    assert!(matches!(
        matmul_typed(&ctx, h, g, o, huge, f16, auto),
        Err(Error::ShapeMismatch { .. })
    ));
    let four = MatmulDims { m: 2, n: 2, k: 2 };
    for (a, b, c) in [(h, g, h), (h, g, g)] {
        assert!(matches!(
            matmul_typed(&ctx, a, b, c, four, f16, auto),
            Err(Error::InvalidParameter { .. })
        ));
    }
    // A caller's kernel may not use cooperative matrices (bounds checks miss their tiles):
    // vramkit's own one, dispatched by a caller, is compiled checked and refused.
    if ctx.adapter_info().api != "CUDA" {
        let params = [4u32, 4, 8, 0];
        assert!(matches!(
            ctx.dispatch(
                &vramkit_kernels::shaders::MATMUL_F16_COOP,
                &[h, g, o],
                bytemuck::cast_slice(&params),
                [1, 1, 1]
            ),
            Err(Error::Unsupported { .. })
        ));
    }
    // The cooperative kernel multiplies f16 only, in every block shape; where the adapter
    // lists no cooperative matrix, no shape runs.
    let coop = matmul_f16_kernel(&ctx, MatmulKernel::Cooperative).is_ok();
    for kernel in [
        MatmulKernel::Cooperative,
        MatmulKernel::CooperativeWith(CoopTile::B128x256),
    ] {
        assert!(matches!(
            matmul_typed(&ctx, h, g, o, four, MatmulDtype::F32, kernel),
            Err(Error::Unsupported { .. })
        ));
        assert_eq!(matmul_f16_kernel(&ctx, kernel).is_ok(), coop, "{kernel:?}");
    }
    if !ctx.backend().has_vendor_matmul() {
        assert!(matches!(
            matmul_typed(&ctx, h, g, o, four, f16, MatmulKernel::Vendor),
            Err(Error::Unsupported { .. })
        ));
    }
    ctx.release(h).expect("release");
    assert!(matches!(
        matmul_typed(&ctx, h, g, o, four, f16, auto),
        Err(Error::StaleHandle { .. })
    ));
    for x in [g, o] {
        ctx.release(x).expect("release");
    }
}
