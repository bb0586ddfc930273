//! `DeviceSet` on two contexts of one device (host memory, the wgpu adapter, CUDA device 0):
//! placement by room, budgets per device and in total never exceeded, copies between devices
//! exact, statistics summed, wrong-device handles refused.

mod common;

use common::{random_bytes, Mk};
use rand::{Rng, SeedableRng};
use vramkit::backend::Backend;
use vramkit::devices::{DeviceHandle, DeviceSet};
use vramkit::{AllocDesc, ContextDesc, Error, StaleReason};

const MIB: u64 = 1 << 20;

fn desc(budget: u64) -> ContextDesc {
    ContextDesc {
        budget: Some(budget),
        // Small staging chunks, so that copies cross many chunk boundaries.
        staging_chunk: 64 << 10,
        ..Default::default()
    }
}

fn set<B: Backend>(mk: Mk<B>, budgets: &[u64], total: Option<u64>) -> DeviceSet<B> {
    DeviceSet::from_contexts(budgets.iter().map(|&b| mk(desc(b))).collect(), total)
        .expect("a set of contexts")
}

fn placement_goes_to_the_most_room<B: Backend>(mk: Mk<B>) {
    let s = set(mk, &[64 * MIB, 96 * MIB], None);
    // Device 1 has more room until it holds 32 MiB more than device 0.
    let a = s.alloc_anywhere(AllocDesc::new("a", 16 * MIB)).unwrap();
    assert_eq!(a.device, 1);
    let b = s.alloc_anywhere(AllocDesc::new("b", 16 * MIB)).unwrap();
    assert_eq!(b.device, 1);
    // Now equal room (64 − 0 vs 96 − 32, staging aside while no transfer ran): round-robin
    // among ties, so two requests land on both devices.
    let c = s.alloc_anywhere(AllocDesc::new("c", 4 * MIB)).unwrap();
    let d = s.alloc_anywhere(AllocDesc::new("d", 4 * MIB)).unwrap();
    assert_ne!(c.device, d.device, "ties alternate");
    // A request only the roomier device can hold goes there.
    s.release(a).unwrap();
    s.release(b).unwrap();
    let big = s.alloc_anywhere(AllocDesc::new("big", 64 * MIB)).unwrap();
    assert_eq!(big.device, 1);
    // One that no device can hold is the last refusal, typed.
    assert!(matches!(
        s.alloc_anywhere(AllocDesc::new("huge", 200 * MIB)),
        Err(Error::OverBudget { .. })
    ));
}

fn budgets_and_the_total_hold_under_random_traffic<B: Backend>(mk: Mk<B>) {
    let total = 72 * MIB;
    let budgets = [48 * MIB, 48 * MIB];
    let s = set(mk, &budgets, Some(total));
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let mut live: Vec<DeviceHandle> = Vec::new();
    let (mut refused, mut made) = (0, 0);
    for step in 0..300 {
        if !live.is_empty() && rng.random_bool(0.4) {
            let h = live.swap_remove(rng.random_range(0..live.len()));
            s.release(h).unwrap();
        } else {
            let size = rng.random_range(1..6 * MIB);
            let r = if rng.random_bool(0.5) {
                s.alloc_anywhere(AllocDesc::new("x", size))
            } else {
                s.alloc_on(rng.random_range(0..2), AllocDesc::new("x", size))
            };
            match r {
                Ok(h) => {
                    made += 1;
                    live.push(h);
                }
                Err(Error::OverBudget { .. }) => refused += 1,
                Err(e) => panic!("step {step}: {e}"),
            }
        }
        let stats = s.stats();
        assert!(stats.reserved <= total, "step {step}: {stats}");
        for (i, d) in stats.per_device.iter().enumerate() {
            assert!(d.reserved <= budgets[i], "step {step}: device {i}: {stats}");
        }
        assert_eq!(stats.live, live.len());
    }
    assert!(made > 50 && refused > 0, "{made} made, {refused} refused");
}

fn copies_between_devices_are_exact<B: Backend>(mk: Mk<B>) {
    let s = set(mk, &[64 * MIB, 64 * MIB], None);
    let chunk = 64 << 10;
    for (k, len) in [1u64, 4095, chunk, chunk + 1, 3 * chunk + 5, 2 * MIB + 3]
        .into_iter()
        .enumerate()
    {
        let data = random_bytes(len as usize, k as u64);
        let a = s.alloc_on(0, AllocDesc::new("a", len)).unwrap();
        let b = s.alloc_on(1, AllocDesc::new("b", len + 8)).unwrap();
        let c = s.alloc_on(1, AllocDesc::new("c", len)).unwrap();
        s.device(0).unwrap().upload(a.handle, &data).unwrap();
        s.copy(a, b).unwrap();
        assert!(
            matches!(s.copy(b, c), Err(Error::ShapeMismatch { .. })),
            "a destination smaller than the source"
        );
        let back = s.device(1).unwrap().download(b.handle).unwrap();
        assert_eq!(&back[..len as usize], &data[..], "0 → 1, {len} bytes");
        assert!(
            back[len as usize..].iter().all(|&x| x == 0),
            "past the copy: untouched"
        );
        // Back the other way, and within one device.
        let d = s.alloc_on(0, AllocDesc::new("d", len)).unwrap();
        s.copy(a, c).unwrap();
        s.copy(c, d).unwrap();
        assert_eq!(s.device(0).unwrap().download(d.handle).unwrap(), data);
        let e = s.alloc_on(0, AllocDesc::new("e", len)).unwrap();
        s.copy(d, e).unwrap();
        assert_eq!(s.device(0).unwrap().download(e.handle).unwrap(), data);
        for h in [a, b, c, d, e] {
            s.release(h).unwrap();
        }
    }
}

fn statistics_are_summed<B: Backend>(mk: Mk<B>) {
    let s = set(mk, &[64 * MIB, 32 * MIB], Some(80 * MIB));
    let a = s.alloc_on(0, AllocDesc::new("a", 3 * MIB)).unwrap();
    let _b = s.alloc_on(1, AllocDesc::new("b", 5 * MIB + 1)).unwrap();
    let _c = s.alloc_on(1, AllocDesc::new("c", 1000)).unwrap();
    let stats = s.stats();
    let per: Vec<_> = s.devices().iter().map(|c| c.stats()).collect();
    assert_eq!(stats.per_device, per);
    assert_eq!(stats.requested, 3 * MIB + 5 * MIB + 1 + 1000);
    assert_eq!(stats.in_use, per[0].in_use + per[1].in_use);
    assert_eq!(stats.reserved, per[0].reserved + per[1].reserved);
    assert_eq!(stats.live, 3);
    assert_eq!(stats.total_budget, Some(80 * MIB));
    assert!(stats.to_string().contains("2 devices"));
    let summary = s.summary();
    assert!(summary.starts_with(&stats.to_string()), "{summary}");
    for (i, ctx) in s.devices().iter().enumerate() {
        // Each device's own table, after its header (minus the peaks' lines that change).
        let table = ctx.summary();
        let first = table.lines().next().unwrap();
        assert!(
            summary.contains(&format!("== device {i}\n{first}")),
            "{summary}"
        );
    }
    // max_batch: the devices' own answers summed, within the total's room.
    let per_item = 4 * MIB;
    let sum: u64 = s
        .devices()
        .iter()
        .map(|c| c.max_batch(per_item).unwrap())
        .sum();
    let room = (80 * MIB - stats.reserved) / per_item;
    assert_eq!(s.max_batch(per_item).unwrap(), sum.min(room));
    s.release(a).unwrap();
    assert_eq!(s.stats().live, 2);
}

fn wrong_device_handles_are_refused<B: Backend>(mk: Mk<B>) {
    let s = set(mk, &[16 * MIB, 16 * MIB], None);
    let a = s.alloc_on(0, AllocDesc::new("a", 1024)).unwrap();
    let lying = DeviceHandle { device: 1, ..a };
    assert!(matches!(
        s.release(lying),
        Err(Error::StaleHandle {
            reason: StaleReason::ForeignContext
        })
    ));
    let b = s.alloc_on(1, AllocDesc::new("b", 1024)).unwrap();
    assert!(matches!(s.copy(lying, b), Err(Error::StaleHandle { .. })));
    let past = DeviceHandle { device: 2, ..a };
    assert!(matches!(
        s.release(past),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        s.alloc_on(7, AllocDesc::new("x", 1)),
        Err(Error::InvalidParameter { .. })
    ));
    s.release(a).unwrap();
    assert!(matches!(
        s.release(a),
        Err(Error::StaleHandle {
            reason: StaleReason::Released
        })
    ));
}

fn copies_in_opposite_directions_at_once<B: Backend>(mk: Mk<B>) {
    let s = set(mk, &[64 * MIB, 64 * MIB], None);
    let len = 5 * (64 << 10) + 3;
    let data: Vec<Vec<u8>> = (0..2).map(|d| random_bytes(len, 40 + d)).collect();
    let src: Vec<DeviceHandle> = (0..2)
        .map(|d| {
            let h = s.alloc_on(d, AllocDesc::new("src", len as u64)).unwrap();
            s.device(d).unwrap().upload(h.handle, &data[d]).unwrap();
            h
        })
        .collect();
    let dst: Vec<DeviceHandle> = (0..2)
        .map(|d| s.alloc_on(d, AllocDesc::new("dst", len as u64)).unwrap())
        .collect();
    // 0 → 1 on one thread while 1 → 0 runs on another, many times: no order of the two
    // contexts' staging locks may wait for the other.
    std::thread::scope(|t| {
        t.spawn(|| {
            (0..20).for_each(|_| {
                s.copy(src[0], dst[1]).unwrap();
            })
        });
        t.spawn(|| {
            (0..20).for_each(|_| {
                s.copy(src[1], dst[0]).unwrap();
            })
        });
    });
    assert_eq!(
        s.device(1).unwrap().download(dst[1].handle).unwrap(),
        data[0]
    );
    assert_eq!(
        s.device(0).unwrap().download(dst[0].handle).unwrap(),
        data[1]
    );
    // The set's contexts are shared: owning handles work on them.
    let owned = s
        .device(0)
        .unwrap()
        .alloc_owned(AllocDesc::new("owned", 64))
        .unwrap();
    drop(owned);
    assert_eq!(s.stats().live, 4);
}

/// Values in [-1, 1) with 22 significant bits.
fn values(n: usize, seed: u64) -> Vec<f32> {
    random_bytes(4 * n, seed)
        .chunks_exact(4)
        .map(|c| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >> 9) as f32 / 4_194_304.0 - 1.0)
        .collect()
}

fn split_matmul_equals_one_device<B: Backend>(mk: Mk<B>) {
    use vramkit::kernels::{matmul_with, MatmulDims, MatmulKernel};
    // Host memory runs no kernels: there only the copies and the shape checks below run.
    let kernels = mk(ContextDesc::default()).adapter_info().api != "host";
    for (devices, d) in [
        (
            2,
            MatmulDims {
                m: 67,
                n: 33,
                k: 45,
            },
        ),
        (3, MatmulDims { m: 2, n: 130, k: 9 }),
        (
            3,
            MatmulDims {
                m: 100,
                n: 1,
                k: 300,
            },
        ),
    ]
    .into_iter()
    .filter(|_| kernels)
    {
        let s = set(mk, &vec![256 * MIB; devices], Some(512 * MIB));
        let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
        let (a, b) = (values(m * k, 1), values(k * n, 2));
        let alloc = |dev: usize, what: &'static str, len: usize| {
            s.alloc_on(dev, AllocDesc::new(what, 4 * len as u64))
                .unwrap()
        };
        // A on the last device, B on the first, C on the second: every band copies something.
        let (ha, hb, hc) = (
            alloc(devices - 1, "A", m * k),
            alloc(0, "B", k * n),
            alloc(1, "C", m * n),
        );
        s.device(ha.device)
            .unwrap()
            .upload_slice(ha.handle, &a)
            .unwrap();
        s.device(hb.device)
            .unwrap()
            .upload_slice(hb.handle, &b)
            .unwrap();
        let before = s.stats().live;
        s.split_matmul(ha, hb, hc, d, MatmulKernel::Auto).unwrap();
        assert_eq!(
            s.stats().live,
            before,
            "the bands' temporaries are released"
        );
        let split: Vec<f32> = s.device(1).unwrap().download_vec(hc.handle).unwrap();
        // The one-device result, on device 0.
        let ctx = s.device(0).unwrap();
        let (a0, c0) = (alloc(0, "A0", m * k), alloc(0, "C0", m * n));
        ctx.upload_slice(a0.handle, &a).unwrap();
        matmul_with(ctx, a0.handle, hb.handle, c0.handle, d, MatmulKernel::Auto).unwrap();
        let one: Vec<f32> = ctx.download_vec(c0.handle).unwrap();
        common::assert_matmul_close(&split, &a, &b, d, "split");
        // vramkit's own kernels compute each element the same way in a band as in the whole;
        // cuBLAS may pick another algorithm for a band's shape.
        if ctx.adapter_info().api != "CUDA" {
            assert_eq!(split, one, "{d:?}: split == one device, bit for bit");
        }
        // Rows of one's choosing: the first device left out, the last taking the most.
        let mut rows = vec![0u32; devices];
        rows[devices - 1] = d.m - d.m / 3;
        rows[1] += d.m / 3;
        s.device(1)
            .unwrap()
            .upload_slice(hc.handle, &vec![f32::NAN; m * n])
            .unwrap();
        s.split_matmul_rows(ha, hb, hc, d, MatmulKernel::Auto, &rows)
            .unwrap();
        let uneven: Vec<f32> = s.device(1).unwrap().download_vec(hc.handle).unwrap();
        common::assert_matmul_close(&uneven, &a, &b, d, "split by rows");
        if ctx.adapter_info().api != "CUDA" {
            assert_eq!(
                uneven, one,
                "{d:?} rows {rows:?}: == one device, bit for bit"
            );
        }
        for bad in [vec![d.m; devices + 1], vec![1; devices]] {
            assert!(matches!(
                s.split_matmul_rows(ha, hb, hc, d, MatmulKernel::Auto, &bad),
                Err(Error::InvalidParameter { .. })
            ));
        }
    }
    // A band the total budget refuses: a typed error, and every temporary released.
    if kernels {
        // A, B and C made on the contexts (they count in the total), the total just above
        // what they hold: band 1 needs 32 MiB more on device 1 (an A band, B, a C band), more
        // than any block there has left.
        let n = 2048u64;
        let d = MatmulDims {
            m: n as u32,
            n: n as u32,
            k: n as u32,
        };
        let ctxs = vec![mk(desc(64 * MIB)), mk(desc(64 * MIB))];
        let mat = |dev: usize, what: &'static str| DeviceHandle {
            device: dev,
            handle: ctxs[dev].alloc(AllocDesc::new(what, 4 * n * n)).unwrap(),
        };
        let (ha, hb, hc) = (mat(0, "A"), mat(0, "B"), mat(1, "C"));
        let held: u64 = ctxs.iter().map(|c| c.stats().reserved).sum();
        let s = DeviceSet::from_contexts(ctxs, Some(held + 8 * MIB)).unwrap();
        let live = s.stats().live;
        assert!(matches!(
            s.split_matmul(ha, hb, hc, d, MatmulKernel::Auto),
            Err(Error::OverBudget { .. })
        ));
        assert_eq!(s.stats().live, live, "the refused split released its bands");
    }
    // A, B and C on one device (0, then 1): its band (rows from 0) uses them where they lie,
    // no temporary there; the other device makes its three. The same result as one device.
    for home in [0usize, 1].into_iter().filter(|_| kernels) {
        let other = 1 - home;
        let d = MatmulDims {
            m: 70,
            n: 36,
            k: 20,
        };
        let s = set(mk, &[64 * MIB, 64 * MIB], None);
        let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
        let (a, b) = (values(m * k, 5), values(k * n, 6));
        let mat = |what: &'static str, len: usize| {
            s.alloc_on(home, AllocDesc::new(what, 4 * len as u64))
                .unwrap()
        };
        let (ha, hb, hc, c0) = (
            mat("A", m * k),
            mat("B", k * n),
            mat("C", m * n),
            mat("C0", m * n),
        );
        let ctx = s.device(home).unwrap();
        ctx.upload_slice(ha.handle, &a).unwrap();
        ctx.upload_slice(hb.handle, &b).unwrap();
        let made = |i: usize| s.device(i).unwrap().stats().allocations;
        let before = (made(home), made(other));
        s.split_matmul(ha, hb, hc, d, MatmulKernel::Auto).unwrap();
        assert_eq!(
            (made(home), made(other)),
            (before.0, before.1 + 3),
            "device {home} uses A, B and C in place; device {other} makes an A band, B and a C band"
        );
        let split: Vec<f32> = ctx.download_vec(hc.handle).unwrap();
        common::assert_matmul_close(&split, &a, &b, d, "split in place");
        matmul_with(ctx, ha.handle, hb.handle, c0.handle, d, MatmulKernel::Auto).unwrap();
        let one: Vec<f32> = ctx.download_vec(c0.handle).unwrap();
        if ctx.adapter_info().api != "CUDA" {
            assert_eq!(split, one, "split in place == one device, bit for bit");
        }
        // C may not be A or B (a band's C written while another band reads them).
        for (x, what) in [(ha, "A"), (hb, "B")] {
            assert!(
                matches!(
                    s.split_matmul(ha, hb, x, d, MatmulKernel::Auto),
                    Err(Error::InvalidParameter { .. })
                ),
                "C = {what}"
            );
        }
    }
    // Bad shapes are typed errors.
    let s = set(mk, &[64 * MIB, 64 * MIB], None);
    assert!(matches!(
        s.split_matmul(
            s.alloc_on(0, AllocDesc::new("x", 4)).unwrap(),
            s.alloc_on(0, AllocDesc::new("y", 4)).unwrap(),
            s.alloc_on(0, AllocDesc::new("z", 4)).unwrap(),
            MatmulDims {
                m: u32::MAX,
                n: u32::MAX,
                k: u32::MAX
            },
            Default::default()
        ),
        Err(Error::ShapeMismatch { .. })
    ));
    let h = s.alloc_on(0, AllocDesc::new("h", 64)).unwrap();
    let d = MatmulDims { m: 4, n: 4, k: 4 };
    assert!(matches!(
        s.split_matmul(h, h, h, MatmulDims { m: 0, ..d }, Default::default()),
        Err(Error::ShapeMismatch { .. })
    ));
    let small = s.alloc_on(1, AllocDesc::new("small", 60)).unwrap();
    assert!(matches!(
        s.split_matmul(h, h, small, d, Default::default()),
        Err(Error::ShapeMismatch { .. })
    ));
    // Overlapping ranges of one allocation are refused; disjoint ones copy.
    assert!(matches!(
        s.copy_range(h, 0, h, 8, 16),
        Err(Error::InvalidRange { .. })
    ));
    assert!(matches!(
        s.copy_range(h, 0, small, 48, 16),
        Err(Error::InvalidRange { .. })
    ));
    s.device(0)
        .unwrap()
        .upload(h.handle, &(0..64).collect::<Vec<u8>>())
        .unwrap();
    s.copy_range(h, 0, h, 32, 32).unwrap();
    let back = s.device(0).unwrap().download(h.handle).unwrap();
    assert_eq!(&back[32..], &(0..32).collect::<Vec<u8>>()[..]);
}

/// Allocates on every device of `s`, fills one, copies it along the devices in turn and back.
fn round_trip_over<B: Backend>(s: &DeviceSet<B>) {
    let data = random_bytes(300_001, 77);
    let hs: Vec<DeviceHandle> = (0..s.len())
        .map(|d| {
            s.alloc_on(d, AllocDesc::new("x", data.len() as u64))
                .unwrap()
        })
        .collect();
    s.device(0).unwrap().upload(hs[0].handle, &data).unwrap();
    for w in hs.windows(2) {
        s.copy(w[0], w[1]).unwrap();
    }
    let last = *hs.last().unwrap();
    assert_eq!(
        s.device(last.device)
            .unwrap()
            .download(last.handle)
            .unwrap(),
        data
    );
    assert_eq!(s.stats().live, s.len());
}

#[test]
fn every_wgpu_adapter_opens_into_a_set() {
    if common::try_gpu(
        "every_wgpu_adapter_opens_into_a_set",
        ContextDesc::default(),
    )
    .is_none()
    {
        return;
    }
    let s = DeviceSet::wgpu(desc(64 * MIB), Some(256 * MIB)).unwrap();
    for (i, ctx) in s.devices().iter().enumerate() {
        eprintln!("device {i}: {}", ctx.adapter_info());
        assert_eq!(
            ctx.stats().budget,
            Some(64 * MIB),
            "each device gets the description"
        );
    }
    assert!(!s.is_empty());
    assert_eq!(s.total_budget(), Some(256 * MIB));
    round_trip_over(&s);
}

#[cfg(feature = "cuda")]
#[test]
fn every_cuda_device_opens_into_a_set() {
    if common::try_cuda("every_cuda_device_opens_into_a_set", ContextDesc::default()).is_none() {
        return;
    }
    let s = DeviceSet::cuda(desc(64 * MIB), None).unwrap();
    assert_eq!(
        s.len(),
        vramkit::backend::cuda::CudaBackend::device_count().unwrap()
    );
    for (i, ctx) in s.devices().iter().enumerate() {
        eprintln!("device {i}: {}", ctx.adapter_info());
    }
    round_trip_over(&s);
}

#[test]
fn an_empty_set_is_refused() {
    assert!(matches!(
        DeviceSet::<vramkit::backend::host::HostBackend>::from_contexts(Vec::new(), None),
        Err(Error::InvalidParameter { .. })
    ));
}

backend_tests!(
    placement_goes_to_the_most_room,
    budgets_and_the_total_hold_under_random_traffic,
    copies_between_devices_are_exact,
    copies_in_opposite_directions_at_once,
    split_matmul_equals_one_device,
    statistics_are_summed,
    wrong_device_handles_are_refused,
);

/// The time a split by `rows` takes, simulated step by step as `split_matmul_rows` runs: the
/// copies out of `home` one after another over one link (B and each band of A), each device's
/// band once its inputs are in (home's once all its copies are done), and the bands of C back
/// to home one after another once home's band and theirs are done.
fn simulated_split(rows: &[u32], home: usize, n: f64, k: f64, row: f64, link: f64) -> f64 {
    let mut sent = 0.0;
    let mut done = vec![0.0; rows.len()];
    for (i, &r) in rows.iter().enumerate() {
        if i != home && r > 0 {
            sent += 4.0 * k * (n + f64::from(r)) / link;
            done[i] = sent + f64::from(r) * row;
        }
    }
    let mut end = sent + f64::from(rows[home]) * row;
    for (i, &r) in rows.iter().enumerate() {
        if i != home && r > 0 {
            end = end.max(done[i]) + 4.0 * n * f64::from(r) / link;
        }
    }
    end
}

/// `balanced_rows` against a step-by-step simulation of the split: no other split tried
/// (even over every count of devices, home alone, rows moved between home and another
/// device) is faster; the rows add up to M, home takes some, two devices split evenly; the
/// limits (an infinite link: even over all; a link too slow to pay: everything at home) hold.
#[test]
fn balanced_rows_finish_soonest() {
    use vramkit::kernels::MatmulDims;
    let host = |_| vramkit::Context::host(ContextDesc::default());
    for devices in [1usize, 2, 3, 8] {
        let s = DeviceSet::from_contexts((0..devices).map(host).collect(), None).unwrap();
        for (m, nk, row, link) in [
            (8192u32, 8192u32, 2.64e-6, 373e9),
            (4096, 1024, 1e-7, 20e9),
            (4096, 1024, 1e-7, 2e9),
            (100, 300, 1e-5, 1e12),
            (5, 64, 1e-6, 1e12),
        ] {
            let d = MatmulDims { m, n: nk, k: nk };
            let (n, k) = (f64::from(nk), f64::from(nk));
            for home in 0..devices {
                let rows = s.balanced_rows(d, home, row, link).unwrap();
                let what = format!("{devices} devices, {d:?}, home {home}: {rows:?}");
                assert_eq!(
                    rows.iter().map(|&r| u64::from(r)).sum::<u64>(),
                    u64::from(m)
                );
                assert!(rows[home] > 0, "{what}");
                if devices <= 2 {
                    // Two devices: the other's band waits for B and its A band, home's too
                    // (the copies hold its stream), C's band comes back after both: even.
                    let used: Vec<u32> = rows.iter().copied().filter(|&r| r > 0).collect();
                    let spread = used.iter().max().unwrap() - used.iter().min().unwrap();
                    assert!(spread <= 1, "{what}");
                }
                let time = simulated_split(&rows, home, n, k, row, link);
                let mut others: Vec<Vec<u32>> = (1..=devices.min(m as usize))
                    .map(|c| {
                        let mut r = vec![0; devices];
                        let order =
                            std::iter::once(home).chain((0..devices).filter(|&i| i != home));
                        for (slot, i) in order.take(c).enumerate() {
                            r[i] = m / c as u32 + u32::from((slot as u32) < m % c as u32);
                        }
                        r
                    })
                    .collect();
                for i in (0..devices).filter(|&i| i != home && rows[i] > 1) {
                    for shift in [1, rows[i] / 10, rows[i] / 2] {
                        let (mut to_home, mut from_home) = (rows.clone(), rows.clone());
                        to_home[i] -= shift;
                        to_home[home] += shift;
                        if rows[home] > shift {
                            from_home[i] += shift;
                            from_home[home] -= shift;
                            others.push(from_home);
                        }
                        others.push(to_home);
                    }
                }
                for other in &others {
                    let t = simulated_split(other, home, n, k, row, link);
                    assert!(
                        time <= t * (1.0 + 1e-9) + row,
                        "{what} takes {time}, {other:?} {t}"
                    );
                }
            }
            let even = s.balanced_rows(d, 0, row, f64::INFINITY).unwrap();
            assert!(
                even.iter()
                    .all(|&r| r.abs_diff(m / devices.min(m as usize) as u32) <= 1
                        || r == 0 && m < devices as u32),
                "{even:?}"
            );
        }
        // Small cases against the true optimum: every split of M rows over the devices.
        if devices <= 3 {
            for (m, nk, row, link) in [
                (12u32, 8u32, 1e-6, 1e9),
                (12, 64, 1e-6, 5e8),
                (9, 256, 1e-5, 4e9),
                (11, 32, 1e-7, 1e10),
            ] {
                let d = MatmulDims { m, n: nk, k: nk };
                let (n, k) = (f64::from(nk), f64::from(nk));
                let mut splits: Vec<Vec<u32>> = vec![vec![]];
                for _ in 0..devices {
                    splits = splits
                        .into_iter()
                        .flat_map(|p| (0..=m).map(move |r| [p.clone(), vec![r]].concat()))
                        .collect();
                }
                for home in 0..devices {
                    let best = splits
                        .iter()
                        .filter(|r| r.iter().sum::<u32>() == m && r[home] > 0)
                        .map(|r| simulated_split(r, home, n, k, row, link))
                        .fold(f64::INFINITY, f64::min);
                    let rows = s.balanced_rows(d, home, row, link).unwrap();
                    let t = simulated_split(&rows, home, n, k, row, link);
                    assert!(
                        t <= best * (1.0 + 1e-9),
                        "{devices} devices, {d:?}, home {home}: {rows:?} takes {t}, the best {best}"
                    );
                }
            }
        }
        assert!(matches!(
            s.balanced_rows(MatmulDims { m: 0, n: 4, k: 4 }, 0, 1e-6, 1e9),
            Err(Error::ShapeMismatch { .. })
        ));
        let slow = s
            .balanced_rows(
                MatmulDims {
                    m: 64,
                    n: 64,
                    k: 64,
                },
                0,
                1e-9,
                1.0,
            )
            .unwrap();
        assert_eq!(slow[0], 64, "a link too slow to pay: everything at home");
        assert!(matches!(
            s.balanced_rows(MatmulDims { m: 4, n: 4, k: 4 }, devices, 1e-6, 1e9),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            s.balanced_rows(MatmulDims { m: 4, n: 4, k: 4 }, 0, f64::NAN, 1e9),
            Err(Error::InvalidParameter { .. })
        ));
    }
}
