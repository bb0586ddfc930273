//! A device set on one device (two contexts; issue #15's benchmarks before a multi-GPU machine):
//! `DeviceSet::copy` throughput between the two contexts against one context's upload +
//! download of the same bytes (what a host-bounced copy must do at least), and
//! `DeviceSet::split_matmul` over the two contexts against `matmul` on one (f32, `Auto`
//! kernel: cuBLAS on CUDA, the tiled kernel on GPU adapters). On one device the split can only
//! add copies: the figures are the overhead a multi-GPU split pays before it gains anything.
//!
//! Prints a table (no criterion statistics: each figure is the median of 5 timed runs after a
//! warm-up). Sizes: 256 MiB and 4096³ with `--bench`; 1 MiB and 128³ without (`cargo test
//! --all-targets`, as CI runs it: a check that it runs). With `--features cuda`, CUDA device 0
//! too.

mod common;

use std::time::Instant;

use vramkit::backend::Backend;
use vramkit::devices::DeviceSet;
use vramkit::kernels::{matmul_with, MatmulDims, MatmulKernel};
use vramkit::{AllocDesc, Context, ContextDesc};

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

fn run<B: Backend>(name: &str, mk: impl Fn() -> Context<B>) {
    let full = std::env::args().any(|a| a == "--bench");
    let (bytes, size) = if full {
        (256u64 << 20, 4096u32)
    } else {
        (1 << 20, 128)
    };
    let set = DeviceSet::from_contexts(vec![mk(), mk()], None).expect("set");
    println!(
        "{name} ({}): two contexts on one device",
        set.device(0).unwrap().adapter_info()
    );
    // Copies.
    let a = set.alloc_on(0, AllocDesc::new("a", bytes)).expect("alloc");
    let b = set.alloc_on(1, AllocDesc::new("b", bytes)).expect("alloc");
    let host = vec![7u8; bytes as usize];
    let ctx0 = set.device(0).unwrap();
    ctx0.upload(a.handle, &host).expect("upload");
    let copy = median(|| set.copy(a, b).expect("copy"));
    let mut back = vec![0u8; bytes as usize];
    let floor = median(|| {
        ctx0.download_into(a.handle, 0, &mut back)
            .expect("download");
        ctx0.upload(a.handle, &back).expect("upload");
    });
    let gib = bytes as f64 / f64::from(1 << 30);
    println!(
        "  copy {} MiB between contexts: {:.2} ms ({:.1} GiB/s); one context's download + upload: {:.2} ms ({:.1} GiB/s): {:.2}x",
        bytes >> 20,
        copy * 1e3,
        gib / copy,
        floor * 1e3,
        gib / floor,
        floor / copy
    );
    // Split matmul.
    let n = u64::from(size);
    let d = MatmulDims {
        m: size,
        n: size,
        k: size,
    };
    let ma = set
        .alloc_on(0, AllocDesc::new("A", 4 * n * n))
        .expect("alloc");
    let mb = set
        .alloc_on(0, AllocDesc::new("B", 4 * n * n))
        .expect("alloc");
    let mc = set
        .alloc_on(0, AllocDesc::new("C", 4 * n * n))
        .expect("alloc");
    let one = median(|| {
        matmul_with(ctx0, ma.handle, mb.handle, mc.handle, d, MatmulKernel::Auto).expect("matmul");
        ctx0.wait().expect("wait");
    });
    let split = median(|| {
        set.split_matmul(ma, mb, mc, d, MatmulKernel::Auto)
            .expect("split");
    });
    let tflops = |s: f64| 2.0 * (n * n * n) as f64 / s / 1e12;
    println!(
        "  matmul {size}³: one context {:.2} ms ({:.1} TFLOP/s); split over two {:.2} ms ({:.1} TFLOP/s): {:.2}x",
        one * 1e3,
        tflops(one),
        split * 1e3,
        tflops(split),
        one / split
    );
}

fn main() {
    let desc = || common::with_env(ContextDesc::default());
    match Context::new(desc()) {
        Ok(_) => run("wgpu", || Context::new(desc()).expect("adapter")),
        Err(e) => println!("wgpu: skipped ({e})"),
    }
    #[cfg(feature = "cuda")]
    match Context::cuda(0, desc()) {
        Ok(_) => run("cuda", || Context::cuda(0, desc()).expect("device")),
        Err(e) => println!("cuda: skipped ({e})"),
    }
}
