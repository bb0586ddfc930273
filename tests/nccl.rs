//! NCCL all-reduce (feature `nccl`): a missing library is a typed error; one rank gives its
//! input back exactly; two contexts of one GPU are refused as NCCL refuses them (one rank per
//! GPU); with two or more CUDA devices, a real all-reduce of random integer-valued f32 equals the
//! CPU's sum exactly, ordered after device work recorded before it and before work after it, in
//! one process (`NcclGroup`) and over ranks joined by an `NcclId` (`NcclRank`, one thread each).
//!
//! Without CUDA or NCCL the tests skip, saying why, unless `VRAMKIT_REQUIRE_CUDA=1`.
#![cfg(feature = "nccl")]

mod common;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use vramkit::backend::cuda::CudaBackend;
use vramkit::backend::Storage;
use vramkit::devices::{nccl_version, DeviceHandle, DeviceSet, NcclGroup, NcclId, NcclRank};
use vramkit::devices::{CopyPath, ReduceOp};
use vramkit::{AllocDesc, Context, ContextDesc, Error, MemoryKind};

/// Serialises the tests that make communicators: NCCL collectives of several communicators on
/// the same GPUs may wait for each other when issued from threads at once.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static GPU: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GPU.lock().unwrap_or_else(|e| e.into_inner())
}

fn require() -> bool {
    std::env::var("VRAMKIT_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

/// NCCL's version, or `None` (the reason printed) without it, unless required.
fn try_nccl(test: &str) -> Option<(u32, u32, u32)> {
    match nccl_version() {
        Ok(v) => {
            eprintln!("{test}: NCCL {}.{}.{}", v.0, v.1, v.2);
            Some(v)
        }
        Err(e) if require() => panic!("{test}: VRAMKIT_REQUIRE_CUDA=1 but NCCL is missing: {e}"),
        Err(e) => {
            eprintln!("SKIPPED {test}: no NCCL ({e}); set VRAMKIT_REQUIRE_CUDA=1 to fail instead");
            None
        }
    }
}

/// A set of `n` contexts on CUDA device 0, or `None` without CUDA or NCCL.
fn one_device_set(test: &str, n: usize) -> Option<DeviceSet<CudaBackend>> {
    let first = common::try_cuda(test, ContextDesc::default())?;
    try_nccl(test)?;
    let mut contexts = vec![first];
    contexts.extend((1..n).map(|_| common::cuda(ContextDesc::default())));
    Some(DeviceSet::from_contexts(contexts, None).expect("a set"))
}

/// Every CUDA device, or `None` (the reason printed) with fewer than two. NVLink multicast
/// (NVLS) must be off, by the caller's choice: on shared machines it can take the GPUs out of
/// service, so these tests never run with NCCL's default.
fn devices_set(test: &str) -> Option<DeviceSet<CudaBackend>> {
    common::try_cuda(test, ContextDesc::default())?;
    try_nccl(test)?;
    let n = CudaBackend::device_count().expect("counted devices before");
    if n < 2 {
        eprintln!("SKIPPED {test}: {n} CUDA device; a real all-reduce needs two or more");
        return None;
    }
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        let why = "NCCL_NVLS_ENABLE is unset: set NCCL_NVLS_ENABLE=0 (or 1 where NVLink \
                   multicast is allowed) to run the multi-GPU tests";
        assert!(!require(), "{test}: {why}");
        eprintln!("SKIPPED {test}: {why}");
        return None;
    }
    Some(DeviceSet::cuda(common::with_env(ContextDesc::default()), None).expect("every device"))
}

/// Seeded random integers in -1000..=1000 as f32: every sum of a few is exact in any order.
fn ints(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len)
        .map(|_| rng.random_range(-1000..=1000) as f32)
        .collect()
}

fn upload(set: &DeviceSet<CudaBackend>, h: DeviceHandle, v: &[f32]) {
    let ctx = set.device(h.device).unwrap();
    ctx.upload(h.handle, bytemuck::cast_slice(v)).unwrap();
}

fn download(set: &DeviceSet<CudaBackend>, h: DeviceHandle) -> Vec<f32> {
    let ctx = set.device(h.device).unwrap();
    bytemuck::pod_collect_to_vec(&ctx.download(h.handle).unwrap())
}

#[test]
fn a_missing_nccl_is_unsupported_not_a_crash() {
    match nccl_version() {
        Ok((major, minor, _)) => assert!((major, minor) >= (2, 13), "{major}.{minor}"),
        Err(Error::Unsupported { what, reason }) => {
            eprintln!("no NCCL here: {what}: {reason}");
            assert!(reason.contains("libnccl"), "{reason}");
            assert!(matches!(NcclId::new(), Err(Error::Unsupported { .. })));
        }
        Err(e) => panic!("expected a version or Unsupported, got {e:?}"),
    }
}

#[test]
fn ids_round_trip_through_bytes_and_wrong_lengths_are_refused() {
    let bytes: Vec<u8> = (0..NcclId::BYTES).map(|i| (i * 7 % 251) as u8).collect();
    let id = NcclId::from_bytes(&bytes).unwrap();
    assert_eq!(id.as_bytes().to_vec(), bytes);
    for len in [0, 127, 129] {
        assert!(matches!(
            NcclId::from_bytes(&vec![0; len]),
            Err(Error::InvalidParameter { name: "bytes", .. })
        ));
    }
}

#[test]
fn one_rank_gives_its_input_back_exactly() {
    let _gpu = one_at_a_time();
    let Some(set) = one_device_set("one_rank_gives_its_input_back_exactly", 1) else {
        return;
    };
    let nccl = NcclGroup::new(&set).unwrap();
    assert_eq!(nccl.ranks(), 1);
    for (len, op) in [
        (1, ReduceOp::Sum),
        (1_000_003, ReduceOp::Sum),
        (4099, ReduceOp::Max),
        (4099, ReduceOp::Min),
        (4099, ReduceOp::Avg),
        (4099, ReduceOp::Prod),
    ] {
        let v = ints(len, len as u64);
        let b = set
            .alloc_on(0, AllocDesc::new("b", len as u64 * 4))
            .unwrap();
        upload(&set, b, &v);
        nccl.all_reduce(&set, &[b], op).unwrap();
        assert_eq!(download(&set, b), v, "{len} f32, {op:?}");
        set.release(b).unwrap();
    }
}

#[test]
fn bad_buffers_are_typed_errors() {
    let _gpu = one_at_a_time();
    let Some(set) = one_device_set("bad_buffers_are_typed_errors", 1) else {
        return;
    };
    let nccl = NcclGroup::new(&set).unwrap();
    let b = set.alloc_on(0, AllocDesc::new("b", 4096)).unwrap();
    let sum = ReduceOp::Sum;
    // Wrong count.
    for bufs in [&[][..], &[b, b][..]] {
        assert!(matches!(
            nccl.all_reduce(&set, bufs, sum),
            Err(Error::ShapeMismatch { .. })
        ));
    }
    // A buffer that says another device.
    let elsewhere = DeviceHandle { device: 1, ..b };
    assert!(matches!(
        nccl.all_reduce(&set, &[elsewhere], sum),
        Err(Error::InvalidParameter { name: "bufs", .. })
    ));
    // Not whole f32.
    let odd = set.alloc_on(0, AllocDesc::new("odd", 10)).unwrap();
    assert!(matches!(
        nccl.all_reduce(&set, &[odd], sum),
        Err(Error::InvalidParameter { name: "bufs", .. })
    ));
    // Released.
    set.release(odd).unwrap();
    assert!(matches!(
        nccl.all_reduce(&set, &[odd], sum),
        Err(Error::StaleHandle { .. })
    ));
    // A handle of another context (same device, another set).
    let other = one_device_set("bad_buffers_are_typed_errors", 1).unwrap();
    let foreign = other.alloc_on(0, AllocDesc::new("foreign", 4096)).unwrap();
    assert!(matches!(
        nccl.all_reduce(&set, &[foreign], sum),
        Err(Error::StaleHandle { .. })
    ));
    // Another set than the group's.
    assert!(matches!(
        nccl.all_reduce(&other, &[foreign], sum),
        Err(Error::InvalidParameter { name: "set", .. })
    ));
    // Managed memory is not device memory.
    let ctx = set.device(0).unwrap();
    if ctx.backend().supports(MemoryKind::Unified).is_ok() {
        let u = set
            .alloc_on(0, AllocDesc::new("u", 4096).kind(MemoryKind::Unified))
            .unwrap();
        assert!(matches!(
            nccl.all_reduce(&set, &[u], sum),
            Err(Error::Unsupported { .. })
        ));
    }
    // The good buffer still works after all that.
    let v = ints(1024, 3);
    upload(&set, b, &v);
    nccl.all_reduce(&set, &[b], sum).unwrap();
    assert_eq!(download(&set, b), v);
}

/// NCCL refuses two ranks on one GPU (`ncclInvalidUsage`, "Duplicate GPU detected": a check of
/// every rank's bus id at init since NCCL 2.5, and of the device list in `ncclCommInitAll`): that
/// is `Error::Unsupported`, both for a set of two contexts of one device and for two ranks joined
/// by an id on one device.
#[test]
fn two_ranks_on_one_gpu_are_unsupported() {
    let _gpu = one_at_a_time();
    let test = "two_ranks_on_one_gpu_are_unsupported";
    let Some(set) = one_device_set(test, 2) else {
        return;
    };
    // NCCL 2.30 can allow it, experimentally, when asked (`NCCL_MULTI_RANK_GPU_ENABLE=1`): then
    // the all-reduce must be right instead.
    if std::env::var("NCCL_MULTI_RANK_GPU_ENABLE").is_ok_and(|v| v == "1") {
        let nccl = NcclGroup::new(&set).expect("NCCL_MULTI_RANK_GPU_ENABLE=1 allows two ranks");
        let (a, b) = (ints(4099, 1), ints(4099, 2));
        let bufs: Vec<_> = [&a, &b]
            .iter()
            .enumerate()
            .map(|(d, v)| {
                let h = set.alloc_on(d, AllocDesc::new("b", 4099 * 4)).unwrap();
                upload(&set, h, v);
                h
            })
            .collect();
        nccl.all_reduce(&set, &bufs, ReduceOp::Sum).unwrap();
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        for h in bufs {
            assert_eq!(download(&set, h), want);
        }
        return;
    }
    match NcclGroup::new(&set) {
        Err(Error::Unsupported { reason, .. }) => {
            eprintln!("{reason}");
            assert!(reason.contains("one rank per GPU"), "{reason}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let id = NcclId::new().unwrap();
    let bytes = id.as_bytes();
    let joins: Vec<_> = set
        .devices()
        .iter()
        .enumerate()
        .map(|(rank, ctx)| {
            let ctx = Arc::clone(ctx);
            std::thread::spawn(move || {
                let id = NcclId::from_bytes(&bytes).unwrap();
                NcclRank::new(ctx, &id, rank, 2).map(|_| ())
            })
        })
        .collect();
    for j in joins {
        match j.join().unwrap() {
            Err(Error::Unsupported { reason, .. }) => {
                assert!(reason.contains("one rank per GPU"), "{reason}")
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
}

/// Sizes that are not multiples of NCCL's chunks or slices.
const LENS: [usize; 5] = [1, 7, 65_537, 1_000_003, (4 << 20) + 13];

#[test]
fn all_reduce_across_devices_is_exact_and_ordered() {
    let _gpu = one_at_a_time();
    let Some(set) = devices_set("all_reduce_across_devices_is_exact_and_ordered") else {
        return;
    };
    let n = set.len();
    let nccl = NcclGroup::new(&set).unwrap();
    assert_eq!(nccl.ranks(), n);
    for (k, &len) in LENS.iter().enumerate() {
        let bytes = len as u64 * 4;
        let inputs: Vec<Vec<f32>> = (0..n).map(|d| ints(len, (k * 16 + d) as u64)).collect();
        let mut src = Vec::new();
        let mut bufs = Vec::new();
        let mut outs = Vec::new();
        for (d, input) in inputs.iter().enumerate() {
            let s = set.alloc_on(d, AllocDesc::new("src", bytes)).unwrap();
            let b = set.alloc_on(d, AllocDesc::new("buf", bytes)).unwrap();
            let o = set.alloc_on(d, AllocDesc::new("out", bytes)).unwrap();
            upload(&set, s, input);
            // Device work recorded before the all-reduce fills its buffer...
            assert_eq!(set.copy(s, b).unwrap(), CopyPath::Device);
            src.push(s);
            bufs.push(b);
            outs.push(o);
        }
        nccl.all_reduce(&set, &bufs, ReduceOp::Sum).unwrap();
        // ...and device work recorded after it reads the result.
        for (&b, &o) in bufs.iter().zip(&outs) {
            assert_eq!(set.copy(b, o).unwrap(), CopyPath::Device);
        }
        let want: Vec<f32> = (0..len)
            .map(|i| inputs.iter().map(|v| v[i]).sum())
            .collect();
        for d in 0..n {
            assert_eq!(download(&set, outs[d]), want, "{len} f32, device {d}");
            assert_eq!(download(&set, bufs[d]), want, "{len} f32, device {d}");
        }
        // Max, min and average of the same inputs, straight after uploads.
        for (op, f) in [
            (ReduceOp::Max, f32::max as fn(f32, f32) -> f32),
            (ReduceOp::Min, f32::min),
        ] {
            for (d, &b) in bufs.iter().enumerate() {
                upload(&set, b, &inputs[d]);
            }
            nccl.all_reduce(&set, &bufs, op).unwrap();
            let want: Vec<f32> = (0..len)
                .map(|i| inputs.iter().map(|v| v[i]).reduce(f).unwrap())
                .collect();
            for &b in &bufs {
                assert_eq!(download(&set, b), want, "{len} f32, {op:?}");
            }
        }
        for (d, &b) in bufs.iter().enumerate() {
            upload(&set, b, &inputs[d]);
        }
        nccl.all_reduce(&set, &bufs, ReduceOp::Avg).unwrap();
        for &b in &bufs {
            let got = download(&set, b);
            for (i, g) in got.iter().enumerate() {
                let mean = inputs.iter().map(|v| f64::from(v[i])).sum::<f64>() / n as f64;
                assert!(
                    (f64::from(*g) - mean).abs() <= 1e-3,
                    "{len} f32, avg at {i}"
                );
            }
        }
        for h in src.into_iter().chain(bufs).chain(outs) {
            set.release(h).unwrap();
        }
    }
    // Sizes that differ between devices are refused.
    let a = set.alloc_on(0, AllocDesc::new("a", 4096)).unwrap();
    let mut bufs = vec![a];
    bufs.extend((1..n).map(|d| set.alloc_on(d, AllocDesc::new("b", 8192)).unwrap()));
    assert!(matches!(
        nccl.all_reduce(&set, &bufs, ReduceOp::Sum),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn ranks_joined_by_an_id_reduce_across_devices() {
    let _gpu = one_at_a_time();
    let Some(set) = devices_set("ranks_joined_by_an_id_reduce_across_devices") else {
        return;
    };
    let n = set.len();
    let bytes = NcclId::new().unwrap().as_bytes();
    let len = 1_000_003;
    let inputs: Vec<Vec<f32>> = (0..n).map(|d| ints(len, 100 + d as u64)).collect();
    let want: Vec<f32> = (0..len)
        .map(|i| inputs.iter().map(|v| v[i]).sum())
        .collect();
    let joins: Vec<_> = set
        .devices()
        .iter()
        .zip(inputs)
        .enumerate()
        .map(|(rank, (ctx, input))| {
            let ctx: Arc<Context<CudaBackend>> = Arc::clone(ctx);
            std::thread::spawn(move || {
                let id = NcclId::from_bytes(&bytes).unwrap();
                let comm = NcclRank::new(Arc::clone(&ctx), &id, rank, n).unwrap();
                assert_eq!((comm.rank(), comm.ranks()), (rank, n));
                let b = ctx.alloc(AllocDesc::new("b", len as u64 * 4)).unwrap();
                ctx.upload(b, bytemuck::cast_slice(&input)).unwrap();
                // SAFETY: every thread reduces a buffer of `n` f32 with Sum, once.
                unsafe { comm.all_reduce(b, ReduceOp::Sum) }.unwrap();
                let got: Vec<f32> = bytemuck::pod_collect_to_vec(&ctx.download(b).unwrap());
                ctx.release(b).unwrap();
                got
            })
        })
        .collect();
    for (rank, j) in joins.into_iter().enumerate() {
        assert_eq!(j.join().unwrap(), want, "rank {rank}");
    }
}
