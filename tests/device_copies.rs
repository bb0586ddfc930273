//! Device-to-device copies of a `DeviceSet` (`CopyPath::Device`): two contexts of one CUDA
//! device, two contexts on one wgpu device (`WgpuBackend::on_same_device`), and on a machine with several GPUs every pair
//! of CUDA devices (peer copies). Each copy is checked byte for byte, and its ordering with
//! both contexts' work: the destination's earlier writes land before it, a kernel recorded on
//! the source before it is seen by it, and the source's bytes reused right after it do not
//! reach it. Pairs without a direct path (separate wgpu devices, host memory) must take the
//! host path and be just as exact.

mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::devices::{CopyPath, DeviceHandle, DeviceSet};
use vramkit::{AllocDesc, ContextDesc};
use vramkit_kernels::scale;

const MIB: u64 = 1 << 20;

fn desc() -> ContextDesc {
    common::budget_desc(128 * MIB)
}

fn download<B: Backend>(s: &DeviceSet<B>, h: DeviceHandle) -> Vec<u8> {
    s.device(h.device).unwrap().download(h.handle).unwrap()
}

fn upload<B: Backend>(s: &DeviceSet<B>, h: DeviceHandle, data: &[u8]) {
    s.device(h.device).unwrap().upload(h.handle, data).unwrap();
}

/// Copies between devices `from` and `to` of `s`, expecting `want` for aligned ranges.
fn copies_are_exact_and_ordered<B: Backend>(
    s: &DeviceSet<B>,
    from: usize,
    to: usize,
    want: CopyPath,
) {
    let chunk = 64 << 10;
    for (k, len) in [4u64, 256, chunk, 3 * chunk + 4, 2 * MIB + 4, 16 * MIB]
        .into_iter()
        .enumerate()
    {
        let seed = 1000 * from as u64 + 100 * to as u64 + k as u64;
        let data = random_bytes(len as usize, seed);
        let a = s.alloc_on(from, AllocDesc::new("a", len)).unwrap();
        upload(s, a, &data);
        // The destination's earlier write lands first, and the bytes past the copy stay.
        let b = s.alloc_on(to, AllocDesc::new("b", len + 8)).unwrap();
        let before = random_bytes(len as usize + 8, seed + 7);
        upload(s, b, &before);
        assert_eq!(s.copy(a, b).unwrap(), want, "{from} → {to}, {len} bytes");
        // The source's bytes reused at once: the copy must not see the new data.
        s.release(a).unwrap();
        let a2 = s.alloc_on(from, AllocDesc::new("a2", len)).unwrap();
        upload(s, a2, &random_bytes(len as usize, seed + 13));
        let back = download(s, b);
        assert_eq!(
            &back[..len as usize],
            &data[..],
            "{from} → {to}, {len} bytes"
        );
        assert_eq!(
            &back[len as usize..],
            &before[len as usize..],
            "past the copy"
        );
        if len >= 1024 {
            // Aligned starts inside the allocations: direct as well.
            let n = len - 512;
            assert_eq!(s.copy_range(b, 256, a2, 512, n).unwrap(), want);
            let got = download(s, a2);
            assert_eq!(&got[512..], &data[256..256 + n as usize], "at offsets");
            // A start off the alignment (or off a word) goes through the host, as exactly.
            for (from_at, to_at) in [(4usize, 8usize), (1, 2), (3, 0), (0, 1)] {
                let got_path = s
                    .copy_range(b, from_at as u64, a2, to_at as u64, n)
                    .unwrap();
                assert_eq!(got_path, CopyPath::Host, "{from_at} → {to_at}");
                let got = download(s, a2);
                let (src, dst) = (
                    &data[from_at..from_at + n as usize],
                    &got[to_at..to_at + n as usize],
                );
                assert!(src == dst, "unaligned {from_at} → {to_at}, {n} bytes");
            }
        }
        s.release(a2).unwrap();
        s.release(b).unwrap();
    }
    // A kernel recorded on the source (not submitted) before the copy is seen by it.
    let ctx = s.device(from).unwrap();
    if ctx.adapter_info().api != "host" {
        let n = 100_003usize;
        let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let hx = s.alloc_on(from, AllocDesc::new("x", 4 * n as u64)).unwrap();
        let hy = s.alloc_on(from, AllocDesc::new("y", 4 * n as u64)).unwrap();
        let hz = s.alloc_on(to, AllocDesc::new("z", 4 * n as u64)).unwrap();
        ctx.upload_slice(hx.handle, &x).unwrap();
        scale(ctx, hx.handle, hy.handle, 2.0, 1.0).unwrap();
        assert_eq!(s.copy(hy, hz).unwrap(), want);
        let z: Vec<f32> = s.device(to).unwrap().download_vec(hz.handle).unwrap();
        let expect: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
        assert_eq!(
            z, expect,
            "the copy runs after the kernel recorded before it"
        );
        for h in [hx, hy, hz] {
            s.release(h).unwrap();
        }
    }
}

/// Both directions at once, many times: the two contexts' managers are locked in one order.
fn opposite_directions_at_once<B: Backend>(s: &DeviceSet<B>, want: CopyPath) {
    let len = 3 * MIB;
    let data: Vec<Vec<u8>> = (0..2).map(|d| random_bytes(len as usize, 50 + d)).collect();
    let src: Vec<DeviceHandle> = (0..2)
        .map(|d| {
            let h = s.alloc_on(d, AllocDesc::new("src", len)).unwrap();
            upload(s, h, &data[d]);
            h
        })
        .collect();
    let dst: Vec<DeviceHandle> = (0..2)
        .map(|d| s.alloc_on(d, AllocDesc::new("dst", len)).unwrap())
        .collect();
    std::thread::scope(|t| {
        t.spawn(|| (0..20).for_each(|_| assert_eq!(s.copy(src[0], dst[1]).unwrap(), want)));
        t.spawn(|| (0..20).for_each(|_| assert_eq!(s.copy(src[1], dst[0]).unwrap(), want)));
    });
    assert_eq!(download(s, dst[1]), data[0]);
    assert_eq!(download(s, dst[0]), data[1]);
    for h in src.into_iter().chain(dst) {
        s.release(h).unwrap();
    }
}

/// Two contexts made by `mk` on one device: direct on CUDA (one device), through the host
/// elsewhere (separate wgpu devices, host memory).
fn two_contexts_of_one_device<B: Backend>(mk: Mk<B>) {
    let s = DeviceSet::from_contexts(vec![mk(desc()), mk(desc())], None).unwrap();
    let want = if s.device(0).unwrap().adapter_info().api == "CUDA" {
        CopyPath::Device
    } else {
        CopyPath::Host
    };
    copies_are_exact_and_ordered(&s, 0, 1, want);
    copies_are_exact_and_ordered(&s, 1, 0, want);
    // Within one context: the backend's own copy, between allocations and within one.
    copies_are_exact_and_ordered(&s, 0, 0, CopyPath::Device);
    opposite_directions_at_once(&s, want);
}

backend_tests!(two_contexts_of_one_device);

#[test]
fn contexts_sharing_one_wgpu_device_copy_directly() {
    use vramkit::backend::wgpu::WgpuBackend;
    let Some(base) = common::try_gpu("contexts_sharing_one_wgpu_device_copy_directly", desc())
    else {
        return;
    };
    let sibling = vramkit::Context::with_backend(base.backend().on_same_device(), desc());
    let s = DeviceSet::from_contexts(vec![base, sibling], None).unwrap();
    copies_are_exact_and_ordered(&s, 0, 1, CopyPath::Device);
    copies_are_exact_and_ordered(&s, 1, 0, CopyPath::Device);
    opposite_directions_at_once(&s, CopyPath::Device);
    // Two backends an application made from clones of one device are not known to share it
    // (wgpu cannot tell): through the host, as exactly.
    let b = s.device(0).unwrap().backend();
    let mk = || {
        let (a, d, q) = (b.adapter().clone(), b.device().clone(), b.queue().clone());
        vramkit::Context::with_backend(WgpuBackend::from_device(a, d, q).unwrap(), desc())
    };
    let apps = DeviceSet::from_contexts(vec![mk(), mk()], None).unwrap();
    copies_are_exact_and_ordered(&apps, 0, 1, CopyPath::Host);
}

/// Holding a context's CUDA stream (a host function that sleeps on it) makes the order of the
/// copy against both contexts' work observable: without the backend's ordering, the copy
/// would read what came later or miss what came before.
#[cfg(feature = "cuda")]
mod held {
    use super::*;
    use vramkit::backend::cuda::cudarc::driver::sys;
    use vramkit::backend::cuda::CudaBackend;

    unsafe extern "C" fn sleep(_: *mut std::ffi::c_void) {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }

    /// Work recorded on `ctx` after this waits 300 ms.
    fn hold(ctx: &vramkit::Context<CudaBackend>) {
        ctx.submit().unwrap(); // binds the context to this thread
                               // SAFETY: a live stream of the current context and a callback that touches nothing.
        unsafe { sys::cuLaunchHostFunc(ctx.backend().stream(), Some(sleep), std::ptr::null_mut()) }
            .result()
            .unwrap();
    }

    /// One staging chunk per 8 MiB upload, so that an upload behind a held stream is one
    /// queued copy (with small chunks, the staging ring would wait for the hold itself).
    pub fn held_desc() -> ContextDesc {
        ContextDesc {
            budget: Some(256 * MIB),
            staging_chunk: 16 << 20,
            ..Default::default()
        }
    }

    pub fn order_holds_against_held_streams(s: &DeviceSet<CudaBackend>, from: usize, to: usize) {
        let len = 8 * MIB;
        let (old, new) = (random_bytes(len as usize, 1), random_bytes(len as usize, 2));
        let (src, dst) = (s.device(from).unwrap(), s.device(to).unwrap());
        // The destination held: the copy waits there while the source's memory is released
        // and written anew (the memory manager reuses it at once, in stream order); none of
        // that may reach the copy. (Not `trim`: freeing pinned staging synchronises the whole
        // context, which two contexts of one device share.)
        let a = s.alloc_on(from, AllocDesc::new("a", len)).unwrap();
        upload(s, a, &old);
        src.wait().unwrap();
        let b = s.alloc_on(to, AllocDesc::new("b", len)).unwrap();
        hold(dst);
        assert_eq!(s.copy(a, b).unwrap(), CopyPath::Device);
        s.release(a).unwrap();
        let a2 = s.alloc_on(from, AllocDesc::new("a2", len)).unwrap();
        upload(s, a2, &new);
        assert!(
            download(s, b) == old,
            "{from} → {to}: the source's later work came first"
        );
        // The source held: an upload recorded before the copy (queued behind the hold) must
        // reach it.
        hold(src);
        upload(s, a2, &old);
        assert_eq!(s.copy(a2, b).unwrap(), CopyPath::Device);
        assert!(
            download(s, b) == old,
            "{from} → {to}: the copy ran before the source's work"
        );
        s.release(a2).unwrap();
        s.release(b).unwrap();
    }

    /// Whether CUDA devices `a` and `b` reach each other (`cuDeviceCanAccessPeer` both ways).
    pub fn peers(a: usize, b: usize) -> bool {
        let dev = |i: usize| {
            let mut d = 0;
            // SAFETY: writes one device handle; the driver is loaded (a context exists).
            unsafe { sys::cuDeviceGet(&mut d, i as i32) }
                .result()
                .unwrap();
            d
        };
        let can = |x, y| {
            let mut c = 0;
            // SAFETY: writes one int.
            unsafe { sys::cuDeviceCanAccessPeer(&mut c, x, y) }
                .result()
                .unwrap();
            c != 0
        };
        a == b || (can(dev(a), dev(b)) && can(dev(b), dev(a)))
    }

    #[test]
    fn two_contexts_of_one_device_keep_the_order() {
        let Some(first) =
            common::try_cuda("held::two_contexts_of_one_device_keep_the_order", desc())
        else {
            return;
        };
        drop(first);
        let s = DeviceSet::from_contexts(
            vec![common::cuda(held_desc()), common::cuda(held_desc())],
            None,
        )
        .unwrap();
        order_holds_against_held_streams(&s, 0, 1);
        order_holds_against_held_streams(&s, 1, 0);
    }
}

/// Every pair of CUDA devices (peer copies where the devices reach each other, else through
/// the host); with one device, its two contexts.
#[cfg(feature = "cuda")]
#[test]
fn every_pair_of_cuda_devices() {
    if common::try_cuda("every_pair_of_cuda_devices", desc()).is_none() {
        return;
    }
    let s = DeviceSet::cuda(desc(), None).unwrap();
    eprintln!("{} CUDA devices", s.len());
    if s.len() < 2 {
        eprintln!(
            "every_pair_of_cuda_devices: one device; cuda::two_contexts_of_one_device covers it"
        );
        return;
    }
    for from in 0..s.len() {
        for to in 0..s.len() {
            // The first copy finds out whether the pair reaches each other directly.
            let probe = s.alloc_on(from, AllocDesc::new("probe", 4096)).unwrap();
            let sink = s.alloc_on(to, AllocDesc::new("sink", 4096)).unwrap();
            let path = s.copy(probe, sink).unwrap();
            eprintln!("CUDA {from} → {to}: {path:?}");
            if held::peers(from, to) {
                assert_eq!(path, CopyPath::Device, "{from} → {to}: peers copy directly");
            }
            s.release(probe).unwrap();
            s.release(sink).unwrap();
            copies_are_exact_and_ordered(&s, from, to, path);
        }
    }
    let probe = s.alloc_on(0, AllocDesc::new("p", 4)).unwrap();
    let sink = s.alloc_on(1, AllocDesc::new("q", 4)).unwrap();
    let path = s.copy(probe, sink).unwrap();
    opposite_directions_at_once(&s, path);
    let hs = DeviceSet::cuda(held::held_desc(), None).unwrap();
    for (from, to) in [(0, 1), (1, 0)] {
        if held::peers(from, to) {
            held::order_holds_against_held_streams(&hs, from, to);
        }
    }
}
