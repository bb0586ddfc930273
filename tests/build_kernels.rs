//! `Context::build_kernels`: the kernels it is given are built (each once, however often it is
//! called), their launches afterwards build nothing and give the CPU's answer, and a kernel
//! that does not build fails the call while the others are built all the same. Builds are
//! counted from the backends' log ("… built in … ms").

#[path = "common/builds.rs"]
mod builds;
mod common;
#[path = "common/times.rs"]
mod times;

use builds::{count, one_at_a_time};
use common::Mk;
use times::{bits, cpu, floats, run, times};
use vramkit::backend::{Backend, KernelSource};
use vramkit::{AllocDesc, ContextDesc, ErrorKind};

gpu_tests!(
    kernels_built_together_are_launched_without_a_build,
    threads_that_build_one_list_at_once_build_each_kernel_once,
    a_kernel_that_does_not_build_fails_alone,
);

fn kernels_built_together_are_launched_without_a_build<B: Backend>(mk: Mk<B>) {
    let _one = one_at_a_time();
    let ctx = mk(ContextDesc::default());
    let factors = [2.0f32, -0.75, 3.5];
    let kernels: Vec<KernelSource> = factors
        .iter()
        .map(|f| times(&format!("built ahead {f}"), *f))
        .collect();
    let list: Vec<_> = kernels.iter().map(|k| (k, &[][..])).collect();
    let before = count();
    ctx.build_kernels(&list).expect("build");
    assert_eq!(count() - before, kernels.len(), "one build per kernel");
    ctx.build_kernels(&list).expect("build again");
    ctx.build_kernels(&list[1..2]).expect("build one again");
    assert_eq!(
        count() - before,
        kernels.len(),
        "built kernels are not built again"
    );
    let n = 1000;
    let xs = floats(n, 11);
    let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
    let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
    ctx.upload_slice(x, &xs).expect("upload");
    for (k, f) in kernels.iter().zip(factors) {
        run(&ctx, k, x, y, n as u32);
        let ys: Vec<f32> = ctx.download_vec(y).expect("download");
        assert_eq!(bits(&ys), cpu(&xs, f), "factor {f}");
    }
    assert_eq!(
        count() - before,
        kernels.len(),
        "a launch built its kernel again"
    );
}

fn threads_that_build_one_list_at_once_build_each_kernel_once<B: Backend>(mk: Mk<B>) {
    let _one = one_at_a_time();
    let ctx = mk(ContextDesc::default());
    let kernels: Vec<KernelSource> = (0..4)
        .map(|i| times(&format!("shared {i}"), i as f32 + 1.5))
        .collect();
    let list: Vec<_> = kernels.iter().map(|k| (k, &[][..])).collect();
    let before = count();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| ctx.build_kernels(&list).expect("build"));
        }
    });
    assert_eq!(count() - before, kernels.len(), "each kernel built once");
    let n = 256;
    let xs = floats(n, 21);
    let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
    let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
    ctx.upload_slice(x, &xs).expect("upload");
    for (i, k) in kernels.iter().enumerate() {
        run(&ctx, k, x, y, n as u32);
        let ys: Vec<f32> = ctx.download_vec(y).expect("download");
        assert_eq!(bits(&ys), cpu(&xs, i as f32 + 1.5), "kernel {i}");
    }
    assert_eq!(count() - before, kernels.len(), "no launch built again");
}

fn a_kernel_that_does_not_build_fails_alone<B: Backend>(mk: Mk<B>) {
    let _one = one_at_a_time();
    let bad = KernelSource::owned("does not build", "fn main( {", "main");
    // The bad kernel first (built on the calling thread) and last (on a thread of its own).
    for bad_first in [true, false] {
        let ctx = mk(ContextDesc::default());
        let good = times("builds", 4.0);
        let list = if bad_first {
            [(&bad, &[][..]), (&good, &[][..])]
        } else {
            [(&good, &[][..]), (&bad, &[][..])]
        };
        let before = count();
        let e = ctx
            .build_kernels(&list)
            .expect_err("a kernel that does not parse");
        assert!(
            matches!(e.kind(), ErrorKind::Shader | ErrorKind::Backend),
            "{e}"
        );
        assert!(
            e.to_string().contains("does not build"),
            "names the kernel: {e}"
        );
        assert_eq!(count() - before, 1, "the good kernel is built, once");
        let e = ctx.build_kernels(&list).expect_err("again");
        assert!(e.to_string().contains("does not build"), "{e}");
        assert_eq!(count() - before, 1, "the good kernel is not built again");
        let n = 64;
        let xs = floats(n, 3);
        let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
        let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
        ctx.upload_slice(x, &xs).expect("upload");
        run(&ctx, &good, x, y, n as u32);
        let ys: Vec<f32> = ctx.download_vec(y).expect("download");
        assert_eq!(bits(&ys), cpu(&xs, 4.0));
        assert_eq!(count() - before, 1, "its launch built nothing");
    }
}
