//! What only the CUDA backend has: run-time loading of the driver (a typed error without it),
//! driver out-of-memory, pinned staging, cuBLAS next to vramkit's own kernels. The generic
//! suites (memory, gpu, matmul, image, pipeline) run on CUDA through `gpu_tests!`.
#![cfg(feature = "cuda")]

mod common;

use common::try_cuda;
use vramkit::backend::cuda::CudaBackend;
use vramkit::backend::Storage;
use vramkit::{AllocDesc, Context, ContextDesc, Error, MemoryKind};
use vramkit_kernels::{matmul_with, MatmulDims, MatmulKernel, TiledConfig};

const GIB: u64 = 1 << 30;

#[test]
fn a_missing_driver_or_device_is_no_adapter_not_a_crash() {
    match Context::cuda(0, ContextDesc::default()) {
        Ok(ctx) => {
            assert_eq!(ctx.adapter_info().api, "CUDA");
            eprintln!("CUDA present: {}", ctx.adapter_info());
        }
        Err(Error::NoAdapter { reason }) => {
            eprintln!("no CUDA here: {reason}");
            assert!(
                reason.contains("driver") || reason.contains("CUDA"),
                "{reason}"
            );
        }
        Err(e) => panic!("expected a context or NoAdapter, got {e:?}"),
    }
    match Context::cuda(4096, ContextDesc::default()) {
        Err(Error::NoAdapter { reason }) => assert!(!reason.is_empty()),
        other => panic!("device 4096 must not exist: {other:?}"),
    }
}

#[test]
fn driver_out_of_memory_is_an_error_and_the_context_survives() {
    let Some(ctx) = try_cuda("cuda out of memory", ContextDesc::default()) else {
        return;
    };
    let total = ctx.backend().memory_info().expect("cuMemGetInfo").total;
    let mut held = Vec::new();
    let err = loop {
        match ctx.alloc(AllocDesc::new("hog", 4 * GIB).uninit()) {
            Ok(h) => held.push(h),
            Err(e) => break e,
        }
        assert!(
            (held.len() as u64) * 4 * GIB <= total + 4 * GIB,
            "allocated past the device's {total} bytes"
        );
    };
    match err {
        Error::OutOfMemory { kind, detail, .. } => {
            assert_eq!(kind, MemoryKind::Device);
            assert!(detail.contains("OUT_OF_MEMORY"), "{detail}");
        }
        e => panic!("expected OutOfMemory, got {e:?}"),
    }
    eprintln!("out of memory after {} GiB", held.len() * 4);
    ctx.release(held.pop().expect("at least one 4 GiB block fits"))
        .expect("release");
    ctx.memory().trim().expect("trim");
    let h = ctx
        .alloc(AllocDesc::new("after", 1 << 20))
        .expect("memory returns after a release and trim");
    ctx.upload(h, &[9u8; 1 << 20]).expect("upload");
    assert!(ctx.download(h).expect("download").iter().all(|&b| b == 9));
    for h in held.into_iter().chain([h]) {
        ctx.release(h).expect("release");
    }
}

#[test]
fn device_transfers_go_through_pinned_staging() {
    let Some(ctx) = try_cuda("cuda staging", ContextDesc::default()) else {
        return;
    };
    let data = common::random_bytes(20 << 20, 7);
    let h = ctx
        .alloc(AllocDesc::new("d", data.len() as u64))
        .expect("alloc");
    ctx.upload(h, &data).expect("upload");
    assert!(
        ctx.stats().staging > 0,
        "device memory is reached through staging"
    );
    assert!(ctx.download(h).expect("download") == data);
    ctx.release(h).expect("release");
}

#[test]
fn cublas_and_the_own_kernels_agree() {
    let Some(ctx) = try_cuda("cuda cublas", ContextDesc::default()) else {
        return;
    };
    let backend: &CudaBackend = ctx.backend();
    eprintln!("cuBLAS: {}", backend.has_cublas());
    let d = MatmulDims {
        m: 300,
        n: 200,
        k: 100,
    };
    let a: Vec<f32> = (0..300 * 100).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..100 * 200).map(|i| (i % 5) as f32 * 0.5).collect();
    let ha = ctx
        .alloc(AllocDesc::new("a", 300 * 100 * 4))
        .expect("alloc");
    let hb = ctx
        .alloc(AllocDesc::new("b", 100 * 200 * 4))
        .expect("alloc");
    let hc = ctx
        .alloc(AllocDesc::new("c", 300 * 200 * 4))
        .expect("alloc");
    ctx.upload(ha, bytemuck::cast_slice(&a)).expect("upload");
    ctx.upload(hb, bytemuck::cast_slice(&b)).expect("upload");
    // Small integers and halves: every product and sum is exact in f32, so all agree exactly.
    let want = vramkit_kernels::matmul_cpu(&a, &b, d);
    let mut kernels = vec![
        MatmulKernel::Tiled,
        MatmulKernel::TiledWith(TiledConfig::default()),
        MatmulKernel::TiledWith(TiledConfig {
            bk: 16,
            vec4: false,
            unroll: true,
        }),
        MatmulKernel::Register,
        MatmulKernel::Auto,
    ];
    if backend.has_cublas() {
        kernels.push(MatmulKernel::Vendor);
    }
    for k in kernels {
        matmul_with(&ctx, ha, hb, hc, d, k).expect("matmul");
        let got: Vec<f32> = bytemuck::cast_slice(&ctx.download(hc).expect("download")).to_vec();
        assert_eq!(got, want, "{k:?}");
    }
}

#[test]
fn no_vendor_blas_never_loads_cublas() {
    let desc = ContextDesc {
        debug: vramkit::DebugSettings {
            no_vendor_blas: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let Some(ctx) = try_cuda("cuda no vendor blas", desc) else {
        return;
    };
    assert!(!ctx.backend().has_cublas(), "cuBLAS stays unloaded");
    assert_eq!(
        vramkit_kernels::matmul_f16_kernel(&ctx, MatmulKernel::Auto).expect("kernel"),
        MatmulKernel::Tiled
    );
    let [a, b, c] = ["a", "b", "c"].map(|l| ctx.alloc(AllocDesc::new(l, 16)).expect("alloc"));
    let d = MatmulDims { m: 2, n: 2, k: 2 };
    assert!(matches!(
        matmul_with(&ctx, a, b, c, d, MatmulKernel::Vendor),
        Err(Error::Unsupported { .. })
    ));
    // Auto runs vramkit's own kernel, with the right product.
    ctx.upload(a, bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0]))
        .expect("upload");
    ctx.upload(b, bytemuck::cast_slice(&[5.0f32, 6.0, 7.0, 8.0]))
        .expect("upload");
    matmul_with(&ctx, a, b, c, d, MatmulKernel::Auto).expect("matmul");
    let got = ctx.download(c).expect("download");
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, f32>(&got),
        [19.0, 22.0, 43.0, 50.0]
    );
    for h in [a, b, c] {
        ctx.release(h).expect("release");
    }
}

#[test]
fn device_memory_is_one_segment_that_grows_in_place_and_gives_back_its_end() {
    let Some(ctx) = try_cuda("cuda segments", ContextDesc::default()) else {
        return;
    };
    assert!(
        ctx.backend().resizable(MemoryKind::Device),
        "an H200 has virtual memory management: device blocks are segments"
    );
    let a = ctx.alloc(AllocDesc::new("a", 1 << 20)).expect("alloc");
    let data = common::random_bytes(1 << 20, 5);
    ctx.upload(a, &data).expect("upload");
    let at = ctx.observe().allocation_info(a).expect("info");
    let big: Vec<_> = (0..3)
        .map(|_| ctx.alloc(AllocDesc::new("big", GIB)).expect("alloc"))
        .collect();
    assert!(ctx.stats().reserved >= 3 * GIB);
    for h in &big {
        let info = ctx.observe().allocation_info(*h).expect("info");
        assert_eq!(info.block, at.block);
        // New memory reads as zeros.
        assert!(ctx.download(*h).expect("download").iter().all(|&b| b == 0));
    }
    for h in big {
        ctx.release(h).expect("release");
    }
    ctx.memory().trim().expect("trim");
    let s = ctx.stats();
    assert!(
        s.reserved < GIB,
        "the free end went back: {} B reserved",
        s.reserved
    );
    let now = ctx.observe().allocation_info(a).expect("info");
    assert_eq!((now.block, now.offset), (at.block, at.offset));
    assert_eq!(ctx.download(a).expect("download"), data);

    let fixed = Context::with_backend(
        CudaBackend::with_config(
            0,
            vramkit::backend::cuda::CudaConfig {
                segments: false,
                ..Default::default()
            },
        )
        .expect("the device opened a moment ago"),
        ContextDesc::default(),
    );
    assert!(!fixed.backend().resizable(MemoryKind::Device));
    let h = fixed.alloc(AllocDesc::new("f", 1 << 20)).expect("alloc");
    fixed.upload(h, &data).expect("upload");
    assert_eq!(fixed.download(h).expect("download"), data);
}

/// `ctx.interop()`'s vendor matmuls check what they are given before cuBLAS runs: a binding smaller than
/// its matrix and a C that overlaps A are typed errors, and a correct call gives the product.
/// The host has no vendor BLAS and says so.
#[test]
fn the_vendor_matmuls_check_their_bindings() {
    let host = Context::host(ContextDesc::default());
    let x = host.alloc(AllocDesc::new("x", 64)).expect("alloc");
    assert!(!host.interop().has_vendor_blas());
    assert!(matches!(
        host.interop()
            .vendor_matmul(&[x.into(), x.into(), x.into()], [2, 2, 2]),
        Err(Error::Unsupported { .. })
    ));
    let Some(ctx) = try_cuda("cuda vendor matmul checks", ContextDesc::default()) else {
        return;
    };
    if !ctx.interop().has_vendor_blas() {
        eprintln!("SKIPPED cuda vendor matmul checks: cuBLAS did not load");
        return;
    }
    let [a, b, c] = ["a", "b", "c"].map(|l| ctx.alloc(AllocDesc::new(l, 16)).expect("alloc"));
    ctx.upload(a, bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0]))
        .expect("upload");
    ctx.upload(b, bytemuck::cast_slice(&[5.0f32, 6.0, 7.0, 8.0]))
        .expect("upload");
    let too_small = ctx
        .interop()
        .vendor_matmul(&[a.into(), b.into(), c.into()], [4, 4, 4]);
    assert!(
        matches!(too_small, Err(Error::ShapeMismatch { .. })),
        "{too_small:?}"
    );
    let overlapping = ctx
        .interop()
        .vendor_matmul(&[a.into(), b.into(), a.into()], [2, 2, 2]);
    assert!(
        matches!(overlapping, Err(Error::ShapeMismatch { .. })),
        "{overlapping:?}"
    );
    let f16_too_small = ctx
        .interop()
        .vendor_matmul_f16(&[a.into(), b.into(), c.into()], [2, 2, 8]);
    assert!(
        matches!(f16_too_small, Err(Error::ShapeMismatch { .. })),
        "{f16_too_small:?}"
    );
    let index = ctx
        .interop()
        .vendor_matmul(&[a.into(), b.into(), c.into()], [2, 2, 2])
        .expect("vendor matmul");
    ctx.wait_for(index).expect("wait");
    assert_eq!(
        bytemuck::pod_collect_to_vec::<u8, f32>(&ctx.download(c).expect("download")),
        [19.0, 22.0, 43.0, 50.0]
    );
}
