//! Kernels whose source is made at run time (`KernelSource::owned`, a `String` built with
//! `format!`), dispatched through `Context::dispatch`: results against the CPU, a new source
//! under a cached label, and bounds checks that keep a wild launch inside its bindings. A
//! kernel made `unchecked` outside vramkit, as a kernel crate makes its own: launched through
//! `Context::dispatch_unchecked` after its caller validated the params, and still checked when
//! a safe launch runs it wild. Then `Context::wait_for` on the index a launch returns, and
//! `Context::limits`.

mod common;
#[path = "common/times.rs"]
mod times;

use common::{random_bytes, Mk};
use times::{bits, cpu, floats, run, times};
use vramkit::backend::{Backend, KernelSource};
use vramkit::{AllocDesc, ContextDesc, ErrorKind, MemoryKind};

gpu_tests!(
    a_kernel_made_at_run_time_matches_the_cpu,
    a_new_source_under_a_cached_label_is_built_again,
    a_wild_runtime_kernel_stays_inside_its_bindings,
    an_unchecked_kernel_runs_validated_and_a_safe_launch_keeps_its_checks,
    wait_for_a_launch_then_release_at_once,
    a_launch_the_driver_would_refuse_is_refused_before_recording,
);
/// On host memory too: `backend_tests!` in a module of its own (`gpu_tests!` above made the
/// `gpu` and `cuda` modules here).
mod everywhere {
    use super::{limits_without_the_backend_traits, wait_for_checks_its_index};
    crate::backend_tests!(wait_for_checks_its_index, limits_without_the_backend_traits);
}

fn a_kernel_made_at_run_time_matches_the_cpu<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    for (n, factor) in [(1usize, 3.0f32), (1000, -1.5), (100_000, 0.25)] {
        let xs = floats(n, n as u64);
        let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
        let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
        ctx.upload_slice(x, &xs).expect("upload");
        let k = times(&format!("times {factor}"), factor);
        assert!(
            !k.is_unchecked(),
            "a caller's kernel is checked unless made unchecked"
        );
        run(&ctx, &k, x, y, n as u32);
        let ys: Vec<f32> = ctx.download_vec(y).expect("download");
        assert_eq!(bits(&ys), cpu(&xs, factor), "n = {n}, factor {factor}");
        ctx.release(x).expect("release");
        ctx.release(y).expect("release");
    }
}

fn a_new_source_under_a_cached_label_is_built_again<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let n = 777;
    let xs = floats(n, 5);
    let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
    let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
    ctx.upload_slice(x, &xs).expect("upload");
    // One label, sources that differ only in the constant: a shader reloaded at run time.
    for factor in [2.0f32, -0.5, 2.0, 8.0, 8.0] {
        run(&ctx, &times("reloaded", factor), x, y, n as u32);
        let ys: Vec<f32> = ctx.download_vec(y).expect("download");
        assert_eq!(bits(&ys), cpu(&xs, factor), "factor {factor}");
    }
}

fn a_wild_runtime_kernel_stays_inside_its_bindings<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    // Neighbours around x and y in one block, each 1 KiB of random bytes.
    let mut live = Vec::new();
    let mut alloc = |label: &str| {
        let h = ctx
            .alloc(AllocDesc::new(label.to_string(), 1024))
            .expect("alloc");
        live.push(h);
        h
    };
    let before = [alloc("n0"), alloc("n1")];
    let (x, y) = (alloc("x"), alloc("y"));
    let after = [alloc("n2"), alloc("n3")];
    let block = ctx.observe().allocation_info(x).expect("info").block;
    for h in &live {
        let info = ctx.observe().allocation_info(*h).expect("info");
        assert_eq!(
            info.block, block,
            "the test needs its allocations in one block"
        );
    }
    let neighbours: Vec<_> = before.iter().chain(&after).copied().collect();
    let contents: Vec<Vec<u8>> = (0..4).map(|i| random_bytes(1024, 40 + i)).collect();
    for (h, c) in neighbours.iter().zip(&contents) {
        ctx.upload(*h, c).expect("upload");
    }
    let xs = floats(256, 9);
    ctx.upload_slice(x, &xs).expect("upload");
    // n = 4096 over bindings of 256 floats: 3840 threads index past y (and x).
    run(&ctx, &times("wild", 3.0), x, y, 4096);
    ctx.wait().expect("wait");
    for (i, (h, c)) in neighbours.iter().zip(&contents).enumerate() {
        assert!(
            ctx.download(*h).expect("download") == *c,
            "neighbour {i} changed"
        );
    }
    // Indices past the end are clamped to the last element (WGSL's policy and `BUF`'s): each
    // extra thread writes y[255] = 3 x[255], what thread 255 writes.
    let ys: Vec<f32> = ctx.download_vec(y).expect("download");
    assert_eq!(bits(&ys), cpu(&xs, 3.0));
    assert_eq!(ctx.download_vec::<f32>(x).expect("download"), xs);
}

fn an_unchecked_kernel_runs_validated_and_a_safe_launch_keeps_its_checks<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    // SAFETY: `times` has no workgroup memory, and its twin is as `with_cuda` requires.
    let k = unsafe { times("outside, unchecked", 2.0).unchecked() };
    assert!(k.is_unchecked());
    let n = 1000u32;
    let xs = floats(n as usize, 17);
    let x = ctx
        .alloc(AllocDesc::new("x", 4 * u64::from(n)))
        .expect("alloc");
    let y = ctx
        .alloc(AllocDesc::new("y", 4 * u64::from(n)))
        .expect("alloc");
    let guard = ctx.alloc(AllocDesc::new("after y", 1024)).expect("alloc");
    let (yi, gi) = (
        ctx.observe().allocation_info(y).expect("info"),
        ctx.observe().allocation_info(guard).expect("info"),
    );
    assert!(
        yi.block == gi.block
            && gi.offset >= yi.offset + yi.reserved
            && gi.offset < yi.offset + 16 * yi.size,
        "the test needs its guard within reach of a wild write past y: {yi:?} {gi:?}"
    );
    let canary = random_bytes(1024, 77);
    ctx.upload(guard, &canary).expect("upload");
    ctx.upload_slice(x, &xs).expect("upload");
    // The caller's validation: both bindings hold the `n` values the launch covers.
    for h in [x, y] {
        assert!(ctx.observe().allocation_info(h).expect("info").size >= 4 * u64::from(n));
    }
    // SAFETY: x and y hold n floats each (checked above) and invocations index only below n;
    // the kernel has no loop.
    unsafe {
        ctx.dispatch_unchecked(
            &k,
            &[],
            &[x.into(), y.into()],
            &n.to_ne_bytes(),
            [n.div_ceil(64), 1, 1],
        )
    }
    .expect("unchecked launch");
    let ys: Vec<f32> = ctx.download_vec(y).expect("download");
    assert_eq!(bits(&ys), cpu(&xs, 2.0));
    // The same source through a safe launch, wild: 16 times the bound values. It is built
    // with its checks, so the allocation after y keeps its bytes. (Vulkan drivers with robust
    // buffer access drop such writes themselves; CUDA has no such net, and there a build
    // without checks overwrites the guard.)
    run(&ctx, &k, x, y, 16 * n);
    ctx.wait().expect("wait");
    assert!(
        ctx.download(guard).expect("download") == canary,
        "a safe launch of an unchecked kernel wrote past its binding"
    );
    let ys: Vec<f32> = ctx.download_vec(y).expect("download");
    assert_eq!(bits(&ys), cpu(&xs, 2.0));
}

/// A one-binding kernel `probe` whose WGSL declares `decl` (binding 0 is `x`) and runs
/// `body`, with a CUDA twin that does nothing (the checks under test come before any backend).
fn probe(label: &str, decl: &str, size: &str, body: &str) -> KernelSource {
    let wgsl = format!(
        "{decl}
@compute @workgroup_size({size})
fn probe(@builtin(local_invocation_index) i: u32) {{
    {body}
}}
"
    );
    let cuda = format!(
        "{}
extern \"C\" __global__ void probe(BUF(float) x) {{}}
",
        vramkit::backend::CUDA_PRELUDE
    );
    let k = KernelSource::owned(label.to_string(), wgsl, "probe");
    // SAFETY: the twin starts with the CUDA prelude and reaches no memory.
    unsafe { k.with_cuda_owned(cuda) }
}

/// Launches the driver would refuse when the command buffer is submitted (where the refusal
/// would drop the valid work recorded before them) are refused before anything is recorded:
/// a fixed-size array bound to fewer bytes than it declares, a struct's fixed part likewise,
/// workgroup memory and a workgroup past the device's limits. The work recorded before them
/// runs.
fn a_launch_the_driver_would_refuse_is_refused_before_recording<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let limits = ctx.limits();
    let n = 256;
    let xs = floats(n, 11);
    let x = ctx.alloc(AllocDesc::new("x", 4 * n as u64)).expect("alloc");
    let y = ctx.alloc(AllocDesc::new("y", 4 * n as u64)).expect("alloc");
    ctx.upload_slice(x, &xs).expect("upload");
    // Valid work recorded first, not yet submitted.
    run(&ctx, &times("before", 3.0), x, y, n as u32);
    let arr = "@group(0) @binding(0) var<storage, read_write> x: array<f32, 1024>;";
    let e = ctx
        .dispatch(
            &probe("fixed array", arr, "64", "x[i] = 1.0;"),
            &[y],
            &[],
            [1, 1, 1],
        )
        .expect_err("a 1 KiB binding for 4 KiB");
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    assert!(e.to_string().contains("4096 bytes"), "{e}");
    let st = "struct S { head: array<vec4<f32>, 80>, tail: array<f32> }
@group(0) @binding(0) var<storage, read_write> x: S;";
    let e = ctx
        .dispatch(
            &probe("fixed part", st, "64", "x.tail[i] = 1.0;"),
            &[y],
            &[],
            [1, 1, 1],
        )
        .expect_err("1 KiB for a struct of 1,284 bytes at least");
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
    let words = u64::from(limits.max_workgroup_storage) / 4 + 1;
    let shared = format!(
        "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
var<workgroup> tile: array<f32, {words}>;"
    );
    let e = ctx
        .dispatch(
            &probe("shared", &shared, "64", "tile[i] = 1.0; x[i] = tile[i];"),
            &[y],
            &[],
            [1, 1, 1],
        )
        .expect_err("workgroup memory past the device's");
    assert_eq!(e.kind(), ErrorKind::TooLarge, "{e}");
    assert!(e.to_string().contains("workgroup"), "{e}");
    let one = "@group(0) @binding(0) var<storage, read_write> x: array<f32>;";
    let wide = format!("{}", limits.max_workgroup_size[0] + 1);
    let e = ctx
        .dispatch(
            &probe("wide", one, &wide, "x[i] = 1.0;"),
            &[y],
            &[],
            [1, 1, 1],
        )
        .expect_err("a workgroup past the device's");
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    let many = format!("{}, 2", limits.max_invocations);
    let e = ctx
        .dispatch(
            &probe("many", one, &many, "x[i] = 1.0;"),
            &[y],
            &[],
            [1, 1, 1],
        )
        .expect_err("more invocations than the device's");
    assert_eq!(e.kind(), ErrorKind::InvalidParameter, "{e}");
    // What fits is launched: the whole array bound, a workgroup at the limits.
    let big = ctx.alloc(AllocDesc::new("big", 4096)).expect("alloc");
    ctx.dispatch(
        &probe("fits", arr, "64", "x[i] = 1.0;"),
        &[big],
        &[],
        [1, 1, 1],
    )
    .expect("a 4 KiB binding for 4 KiB");
    ctx.wait().expect("wait");
    let ys: Vec<f32> = ctx.download_vec(y).expect("download");
    assert_eq!(bits(&ys), cpu(&xs, 3.0), "the work recorded before ran");
}

fn wait_for_a_launch_then_release_at_once<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let n = 50_000;
    let xs = floats(n, 11);
    let k = times("times 2", 2.0);
    // Unified memory, which the host reaches directly, returns to its pool only once the work
    // that used it has completed; device memory is reused in queue order at once.
    let kind = if ctx.backend().supports(MemoryKind::Unified).is_ok() {
        MemoryKind::Unified
    } else {
        eprintln!("no unified memory on this adapter: the release part checks device memory");
        MemoryKind::Device
    };
    let new = |label: &str| {
        ctx.alloc(AllocDesc::new(label.to_string(), 4 * n as u64).kind(kind))
            .expect("alloc")
    };
    let (x, y) = (new("x"), new("y"));
    ctx.upload_slice(x, &xs).expect("upload");
    let index = run(&ctx, &k, x, y, n as u32);
    ctx.wait_for(index).expect("wait_for");
    assert!(
        ctx.backend().is_done(index.index()).expect("is_done"),
        "waited"
    );
    ctx.release(x).expect("release");
    assert_eq!(
        ctx.stats().pending_release,
        0,
        "the work is done: released at once"
    );
    let ys: Vec<f32> = ctx.download_vec(y).expect("download");
    assert_eq!(bits(&ys), cpu(&xs, 2.0));

    // Released before the wait: pending (for host-visible memory) until `wait_for` collects it.
    let x = new("x again");
    ctx.upload_slice(x, &xs).expect("upload");
    let index = run(&ctx, &k, x, y, n as u32);
    ctx.release(x).expect("release");
    if kind == MemoryKind::Unified {
        assert!(
            ctx.stats().pending_release >= 4 * n as u64,
            "its launch is not submitted"
        );
    }
    ctx.wait_for(index).expect("wait_for");
    assert_eq!(ctx.stats().pending_release, 0, "collected after the wait");
    assert_eq!(ctx.stats().live, 1);
    let ys: Vec<f32> = ctx.download_vec(y).expect("download");
    assert_eq!(bits(&ys), cpu(&xs, 2.0));
}

fn wait_for_checks_its_index<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let h = ctx.alloc(AllocDesc::new("h", 4096)).expect("alloc");
    ctx.upload(h, &[1; 4096]).expect("upload");
    let first = ctx.submit().expect("submit");
    ctx.upload(h, &[2; 4096]).expect("upload");
    let last = ctx.submit().expect("submit");
    assert_eq!(last.is_after(&first), Some(true));
    for index in [first, last, first] {
        ctx.wait_for(index)
            .unwrap_or_else(|e| panic!("wait_for({index:?}) after {last:?}: {e}"));
    }
    // Another context's submission, whose number lies in this context's range: refused, as
    // another context's handles are.
    let other = mk(ContextDesc::default());
    let theirs = other.submit().expect("submit");
    assert!(theirs.index() <= last.index());
    assert_eq!(theirs.is_after(&last), None);
    let e = ctx.wait_for(theirs).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StaleHandle, "{e}");
    other
        .wait_for(theirs)
        .expect("its own context waits for it");
    // The context goes on.
    assert_eq!(ctx.download(h).expect("download"), vec![2; 4096]);
}

fn limits_without_the_backend_traits<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let limits = ctx.limits();
    assert_eq!(&limits, ctx.backend().limits());
    assert!(limits.max_binding_size <= limits.max_block_size);
    assert!(limits.offset_alignment.is_power_of_two());
}
