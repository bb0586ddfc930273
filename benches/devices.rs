//! Device sets (one GPU or several): copy throughput between devices and
//! `kernels::split_matmul` scaling.
//!
//! - Two contexts on one device (wgpu adapter, CUDA device 0): `DeviceSet::copy` device to
//!   device (`CopyPath::Device` where the backend has a path) and through the host (a copy at
//!   an unaligned start takes it), against one context's download + upload of the same bytes
//!   (what a host-bounced copy must do at least); split matmul over the two against one. For
//!   wgpu also two contexts of one `wgpu::Device` (`WgpuBackend::on_same_device`).
//! - With `--features cuda` and several CUDA devices: every ordered pair's copy (peer copies
//!   where the devices reach each other) and through the host, and split matmul over every
//!   device against one (A, B and C on device 0, as a single-GPU program holds them).
//!   Compare the copies with `benches/reference/peer_copy_torch.py` (`Tensor.copy_` between
//!   GPUs: `cudaMemcpyPeerAsync`).
//!
//! Prints a table (each figure the median of 5 timed runs after a warm-up). Sizes: 256 MiB and
//! 4096³ (8192³ over several CUDA devices) with `--bench`; 1 MiB and 128³ without (`cargo test
//! --all-targets`, as CI runs it: a check that it runs).

mod common;

use std::time::Instant;

use vramkit::backend::Backend;
use vramkit::devices::{DeviceHandle, DeviceSet};
use vramkit::{AllocDesc, Context, ContextDesc};
use vramkit_kernels as kernels;
use vramkit_kernels::{matmul_with, MatmulDims, MatmulKernel};

fn median(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

fn full() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Copies `bytes` from device `from` to `to`: device to device (waited for) and through the
/// host; prints both.
fn copies<B: Backend>(set: &DeviceSet<B>, from: usize, to: usize, bytes: u64) -> (f64, f64) {
    let a = set
        .alloc_on(from, AllocDesc::new("a", bytes))
        .expect("alloc");
    let b = set.alloc_on(to, AllocDesc::new("b", bytes)).expect("alloc");
    set.device(from)
        .unwrap()
        .upload(a.handle, &vec![7u8; bytes as usize])
        .expect("upload");
    let mut path = None;
    let direct = median(|| {
        path = Some(set.copy(a, b).expect("copy"));
        set.device(to).unwrap().wait().expect("wait");
    });
    // An unaligned start goes through the host.
    let host = median(|| {
        set.copy_range(a, 4, b, 4, bytes - 4).expect("copy");
    });
    let gb = |s: f64| bytes as f64 / s / 1e9;
    println!(
        "  copy {} MiB {from} → {to}: copy() {:.2} ms ({:.1} GB/s, {:?}); through the host {:.2} ms ({:.1} GB/s)",
        bytes >> 20,
        direct * 1e3,
        gb(direct),
        path.expect("ran"),
        host * 1e3,
        gb(host),
    );
    set.release(a).expect("release");
    set.release(b).expect("release");
    (gb(direct), gb(host))
}

/// Split matmul `size`³ over the whole set against one device, A, B and C on device 0: rows
/// split evenly, and (given the link's bytes/s) as `balanced_rows` plans, and that plan with a
/// twentieth of the rows moved to device 0.
fn split<B: Backend>(set: &DeviceSet<B>, size: u32, link: Option<f64>) {
    let n = u64::from(size);
    let d = MatmulDims {
        m: size,
        n: size,
        k: size,
    };
    let alloc = |what| -> DeviceHandle {
        set.alloc_on(0, AllocDesc::new(what, 4 * n * n))
            .expect("alloc")
    };
    let (ma, mb, mc) = (alloc("A"), alloc("B"), alloc("C"));
    let ctx0 = set.device(0).unwrap();
    let one = median(|| {
        matmul_with(ctx0, ma.handle, mb.handle, mc.handle, d, MatmulKernel::Auto).expect("matmul");
        ctx0.wait().expect("wait");
    });
    let split = median(|| {
        kernels::split_matmul(set, ma, mb, mc, d, MatmulKernel::Auto).expect("split");
        ctx0.wait().expect("wait");
    });
    let tflops = |s: f64| 2.0 * (n * n * n) as f64 / s / 1e12;
    println!(
        "  matmul {size}³: one device {:.2} ms ({:.1} TFLOP/s); split over {} {:.2} ms ({:.1} TFLOP/s): {:.2}x",
        one * 1e3,
        tflops(one),
        set.len(),
        split * 1e3,
        tflops(split),
        one / split
    );
    if let Some(link) = link {
        let rows = kernels::balanced_rows(set, d, 0, one / f64::from(size), link).expect("rows");
        // The plan, and the plan with a twentieth of M moved to device 0 (which holds the
        // inputs) from the last device with rows, which the model says is slower: compare.
        let mut tilted = rows.clone();
        let last = (1..tilted.len()).rev().find(|&i| tilted[i] >= size / 20);
        if let Some(last) = last {
            tilted[last] -= size / 20;
            tilted[0] += size / 20;
        }
        for (rows, what) in [
            (rows, "balanced for the link"),
            (tilted, "device 0 a twentieth more"),
        ]
        .into_iter()
        .take(if last.is_some() { 2 } else { 1 })
        {
            let t = median(|| {
                kernels::split_matmul_rows(set, ma, mb, mc, d, MatmulKernel::Auto, &rows)
                    .expect("split");
                ctx0.wait().expect("wait");
            });
            println!(
                "  matmul {size}³ split by rows {rows:?} ({what}): {:.2} ms ({:.1} TFLOP/s): {:.2}x",
                t * 1e3,
                tflops(t),
                one / t
            );
        }
    }
    for h in [ma, mb, mc] {
        set.release(h).expect("release");
    }
}

/// Two contexts of one device.
fn one_device<B: Backend>(name: &str, mk: impl Fn() -> Context<B>) {
    let (bytes, size) = if full() {
        (256u64 << 20, 4096u32)
    } else {
        (1 << 20, 128)
    };
    let set = DeviceSet::from_contexts(vec![mk(), mk()], None).expect("set");
    println!(
        "{name} ({}): two contexts on one device",
        set.device(0).unwrap().adapter_info()
    );
    let (direct, host) = copies(&set, 0, 1, bytes);
    let ctx0 = set.device(0).unwrap();
    let a = set.alloc_on(0, AllocDesc::new("a", bytes)).expect("alloc");
    let mut back = vec![0u8; bytes as usize];
    let floor = median(|| {
        ctx0.transfers()
            .download_into(a.handle, 0, &mut back)
            .expect("download");
        ctx0.upload(a.handle, &back).expect("upload");
    });
    let gb = bytes as f64 / floor / 1e9;
    println!(
        "  one context's download + upload: {:.2} ms ({gb:.1} GB/s); copy() {:.2}x, through the host {:.2}x of it",
        floor * 1e3,
        direct / gb,
        host / gb
    );
    set.release(a).expect("release");
    split(&set, size, None);
}

/// Every CUDA device, when there are several.
#[cfg(feature = "cuda")]
fn every_cuda_device(desc: &ContextDesc) {
    let set = match DeviceSet::cuda(desc.clone(), None) {
        Ok(s) if s.len() >= 2 => s,
        Ok(_) => return println!("cuda set: one device (the pairs above)"),
        Err(e) => return println!("cuda set: skipped ({e})"),
    };
    println!("cuda set: {} devices", set.len());
    for (i, ctx) in set.devices().iter().enumerate() {
        println!("  device {i}: {}", ctx.adapter_info());
    }
    let (bytes, size) = if full() {
        (256u64 << 20, 8192u32)
    } else {
        (1 << 20, 128)
    };
    let mut link = f64::INFINITY;
    for from in 0..set.len() {
        for to in 0..set.len() {
            if from != to {
                link = link.min(copies(&set, from, to, bytes).0 * 1e9);
            }
        }
    }
    split(&set, size, Some(link));
}

fn main() {
    let desc = common::with_env(ContextDesc::default());
    match Context::new(desc.clone()) {
        Ok(base) => {
            one_device("wgpu", || Context::new(desc.clone()).expect("adapter"));
            // Contexts of one wgpu device.
            let b = base.backend();
            one_device("wgpu, one device (on_same_device)", || {
                Context::with_backend(b.on_same_device(), desc.clone())
            });
        }
        Err(e) => println!("wgpu: skipped ({e})"),
    }
    #[cfg(feature = "cuda")]
    {
        match Context::cuda(0, desc.clone()) {
            Ok(_) => one_device("cuda", || Context::cuda(0, desc.clone()).expect("device")),
            Err(e) => println!("cuda: skipped ({e})"),
        }
        every_cuda_device(&desc);
    }
}
