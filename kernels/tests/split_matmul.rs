//! `kernels::split_matmul` on two and three contexts of one device (host memory, the wgpu
//! adapter, CUDA device 0): equal to one device's matmul (bit for bit with vramkit's kernels),
//! by even rows and rows of one's choosing, the inputs' device working in place, temporaries
//! released also when a band is refused, and bad shapes typed errors.

#[path = "../../tests/common/mod.rs"]
mod common;
mod matmul_close;

use common::{budget_desc, device_set, random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::devices::{DeviceHandle, DeviceSet};
use vramkit::{AllocDesc, ContextDesc, Error};
use vramkit_kernels as kernels;

const MIB: u64 = 1 << 20;

/// Values in [-1, 1) with 22 significant bits.
fn values(n: usize, seed: u64) -> Vec<f32> {
    random_bytes(4 * n, seed)
        .chunks_exact(4)
        .map(|c| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >> 9) as f32 / 4_194_304.0 - 1.0)
        .collect()
}

fn split_matmul_equals_one_device<B: Backend>(mk: Mk<B>) {
    use vramkit_kernels::{matmul_with, MatmulDims, MatmulKernel};
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
        let s = device_set(mk, &vec![256 * MIB; devices], Some(512 * MIB));
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
        kernels::split_matmul(&s, ha, hb, hc, d, MatmulKernel::Auto).unwrap();
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
        matmul_close::assert_matmul_close(&split, &a, &b, d, "split");
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
        kernels::split_matmul_rows(&s, ha, hb, hc, d, MatmulKernel::Auto, &rows).unwrap();
        let uneven: Vec<f32> = s.device(1).unwrap().download_vec(hc.handle).unwrap();
        matmul_close::assert_matmul_close(&uneven, &a, &b, d, "split by rows");
        if ctx.adapter_info().api != "CUDA" {
            assert_eq!(
                uneven, one,
                "{d:?} rows {rows:?}: == one device, bit for bit"
            );
        }
        for bad in [vec![d.m; devices + 1], vec![1; devices]] {
            assert!(matches!(
                kernels::split_matmul_rows(&s, ha, hb, hc, d, MatmulKernel::Auto, &bad),
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
        let ctxs = vec![mk(budget_desc(64 * MIB)), mk(budget_desc(64 * MIB))];
        let mat = |dev: usize, what: &'static str| DeviceHandle {
            device: dev,
            handle: ctxs[dev].alloc(AllocDesc::new(what, 4 * n * n)).unwrap(),
        };
        let (ha, hb, hc) = (mat(0, "A"), mat(0, "B"), mat(1, "C"));
        let held: u64 = ctxs.iter().map(|c| c.stats().reserved).sum();
        let s = DeviceSet::from_contexts(ctxs, Some(held + 8 * MIB)).unwrap();
        let live = s.stats().live;
        assert!(matches!(
            kernels::split_matmul(&s, ha, hb, hc, d, MatmulKernel::Auto),
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
        let s = device_set(mk, &[64 * MIB, 64 * MIB], None);
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
        kernels::split_matmul(&s, ha, hb, hc, d, MatmulKernel::Auto).unwrap();
        assert_eq!(
            (made(home), made(other)),
            (before.0, before.1 + 3),
            "device {home} uses A, B and C in place; device {other} makes an A band, B and a C band"
        );
        let split: Vec<f32> = ctx.download_vec(hc.handle).unwrap();
        matmul_close::assert_matmul_close(&split, &a, &b, d, "split in place");
        matmul_with(ctx, ha.handle, hb.handle, c0.handle, d, MatmulKernel::Auto).unwrap();
        let one: Vec<f32> = ctx.download_vec(c0.handle).unwrap();
        if ctx.adapter_info().api != "CUDA" {
            assert_eq!(split, one, "split in place == one device, bit for bit");
        }
        // C may not be A or B (a band's C written while another band reads them).
        for (x, what) in [(ha, "A"), (hb, "B")] {
            assert!(
                matches!(
                    kernels::split_matmul(&s, ha, hb, x, d, MatmulKernel::Auto),
                    Err(Error::InvalidParameter { .. })
                ),
                "C = {what}"
            );
        }
    }
    // Bad shapes are typed errors.
    let s = device_set(mk, &[64 * MIB, 64 * MIB], None);
    assert!(matches!(
        kernels::split_matmul(
            &s,
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
        kernels::split_matmul(&s, h, h, h, MatmulDims { m: 0, ..d }, Default::default()),
        Err(Error::ShapeMismatch { .. })
    ));
    let small = s.alloc_on(1, AllocDesc::new("small", 60)).unwrap();
    assert!(matches!(
        kernels::split_matmul(&s, h, h, small, d, Default::default()),
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
    let s = DeviceSet::wgpu(budget_desc(64 * MIB), Some(256 * MIB)).unwrap();
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
    let s = DeviceSet::cuda(budget_desc(64 * MIB), None).unwrap();
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

backend_tests!(split_matmul_equals_one_device);
