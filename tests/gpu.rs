//! What only a real device shows: released memory reused in queue order while work is
//! pending, driver out-of-memory, unified memory, kernels, a lost device.

mod common;

use common::{is_cuda, is_lavapipe, random_bytes, try_gpu, Mk};
use vramkit::backend::{Backend, KernelSource};
use vramkit::{AllocDesc, ContextDesc, Error, MemoryAdvice, MemoryKind};
use vramkit_kernels as kernels;
use vramkit_kernels::shaders;

gpu_tests!(
    kernel_matches_cpu,
    released_memory_is_reused_in_queue_order,
    blocks_go_back_only_after_their_work,
    unified_memory_is_host_and_kernel_visible,
    invalid_shader_and_oversized_binding_are_typed_errors,
);

const MIB: u64 = 1 << 20;

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytemuck::cast_slice(bytes).to_vec()
}

fn random_floats(n: usize, seed: u64) -> Vec<f32> {
    random_bytes(n * 4, seed)
        .chunks_exact(4)
        .map(|c| (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >> 8) as f32 / 65536.0 - 128.0)
        .collect()
}

/// `a * x + b` in f64, rounded once: the GPU may fuse or not, so allow one rounding step.
fn check_scale(y: &[f32], x: &[f32], a: f32, b: f32) {
    for (i, (&y, &x)) in y.iter().zip(x).enumerate() {
        let exact = f64::from(a) * f64::from(x) + f64::from(b);
        let tol = 2.0 * f64::from(f32::EPSILON) * (exact.abs() + f64::from(b).abs() + 1.0);
        assert!(
            (f64::from(y) - exact).abs() <= tol,
            "y[{i}] = {y}, expected {exact}"
        );
    }
}

fn kernel_matches_cpu<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    // The last size needs more than 65,535 workgroups: a two-dimensional dispatch.
    for n in [1u32, 255, 256, 257, 100_003, (1 << 24) + 1000] {
        let x = random_floats(n as usize, u64::from(n));
        let xs = ctx
            .alloc(AllocDesc::new("x", u64::from(n) * 4))
            .expect("alloc");
        let ys = ctx
            .alloc(AllocDesc::new("y", u64::from(n) * 4))
            .expect("alloc");
        ctx.upload(xs, bytemuck::cast_slice(&x)).expect("upload");
        kernels::scale(&ctx, xs, ys, 1.5, -2.25).expect("dispatch");
        check_scale(
            &floats(&ctx.download(ys).expect("download")),
            &x,
            1.5,
            -2.25,
        );
        // axpy and add against their twins: add rounds once on both sides (exact match); axpy
        // may fuse or not, one rounding of a·x apart.
        let y0 = random_floats(n as usize, u64::from(n) + 1);
        ctx.upload(ys, bytemuck::cast_slice(&y0)).expect("upload");
        kernels::axpy(&ctx, 0.75, xs, ys).expect("axpy");
        let got = floats(&ctx.download(ys).expect("download"));
        let want = kernels::axpy_cpu(0.75, &x, &y0);
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let tol = 2.0 * f32::EPSILON * ((0.75 * x[i]).abs() + y0[i].abs() + 1.0);
            assert!((g - w).abs() <= tol, "axpy[{i}] = {g}, expected {w}");
        }
        let zs = ctx
            .alloc(AllocDesc::new("z", u64::from(n) * 4))
            .expect("alloc");
        kernels::add(&ctx, xs, ys, zs).expect("add");
        let z = floats(&ctx.download(zs).expect("download"));
        assert_eq!(z, kernels::add_cpu(&x, &got), "add");
        for h in [xs, ys, zs] {
            ctx.release(h).expect("release");
        }
    }
}

/// 2^18 random floats `x` uploaded to `xs`, and `ys` of the same size, with the device idle:
/// `(n, bytes, x, xs, ys)`.
fn uploaded_pair<B: Backend>(
    ctx: &vramkit::Context<B>,
    seed: u64,
) -> (
    u32,
    u64,
    Vec<f32>,
    vramkit::BufferHandle,
    vramkit::BufferHandle,
) {
    let n = 1u32 << 18;
    let bytes = u64::from(n) * 4;
    let x = random_floats(n as usize, seed);
    let xs = ctx.alloc(AllocDesc::new("x", bytes)).expect("alloc");
    let ys = ctx.alloc(AllocDesc::new("y", bytes)).expect("alloc");
    ctx.upload(xs, bytemuck::cast_slice(&x)).expect("upload");
    ctx.wait().expect("wait");
    (n, bytes, x, xs, ys)
}

fn released_memory_is_reused_in_queue_order<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let (n, bytes, x, xs, ys) = uploaded_pair(&ctx, 1);
    let x_at = ctx.observe().allocation_info(xs).expect("info");
    // Record a kernel that reads x, release x before the kernel is even submitted.
    kernels::scale(&ctx, xs, ys, 2.0, 1.0).expect("dispatch");
    ctx.release(xs).expect("release");
    assert_eq!(
        ctx.stats().pending_release,
        0,
        "device memory goes back to the pool at once, as on a CUDA stream"
    );
    // New allocations may take x's memory and write it at once: the queue runs the kernel, which
    // reads the old x, before their writes.
    let mut later = Vec::new();
    let mut reused = false;
    for i in 0..8 {
        let h = ctx.alloc(AllocDesc::new("later", bytes)).expect("alloc");
        let at = ctx.observe().allocation_info(h).expect("info");
        reused |= at.block == x_at.block
            && at.offset < x_at.offset + x_at.reserved
            && x_at.offset < at.offset + at.reserved;
        let data = random_floats(n as usize, 100 + i);
        ctx.upload(h, bytemuck::cast_slice(&data)).expect("upload");
        later.push((h, data));
    }
    assert!(reused, "x's memory was not reused: the test shows nothing");
    check_scale(&floats(&ctx.download(ys).expect("download")), &x, 2.0, 1.0);
    for (h, data) in &later {
        assert!(floats(&ctx.download(*h).expect("download")) == *data);
    }
    // The block is not given back while work that used it may still run.
    for (h, _) in later {
        ctx.release(h).expect("release");
    }
    ctx.release(ys).expect("release");
    ctx.memory().trim().expect("trim");
    assert_eq!(ctx.stats().reserved, ctx.stats().staging);
}

/// lavapipe's device memory is host memory, and it does not enforce its advertised 2 GiB heap.
/// The test runs itself again in a child process whose address space is limited (`ulimit -v`),
/// so the driver's allocations really fail there.
#[test]
fn driver_out_of_memory_is_an_error_and_the_context_survives() {
    const CHILD: &str = "VRAMKIT_OOM_CHILD";
    let name = "driver_out_of_memory_is_an_error_and_the_context_survives";
    if std::env::var_os(CHILD).is_some() {
        return oom_child();
    }
    let Some(ctx) = try_gpu(name, ContextDesc::default()) else {
        return;
    };
    if !is_lavapipe(&ctx) {
        eprintln!("SKIPPED {name}: the address-space limit makes only lavapipe's memory run out");
        return;
    }
    drop(ctx);
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v $((6 * 1024 * 1024)) && exec \"$0\" \"$@\"")
        .arg(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(out.status.success(), "child failed: {}", out.status);
    assert!(
        text.contains("OOM-CHILD-OK"),
        "the child did not run the check"
    );
}

fn oom_child() {
    let Some(ctx) = try_gpu("driver_out_of_memory (child)", ContextDesc::default()) else {
        return;
    };
    let block = 1 << 30;
    let mut held = Vec::new();
    let error = loop {
        match ctx.alloc(AllocDesc::new("fill", block)) {
            Ok(h) => held.push(h),
            Err(e) => break e,
        }
        assert!(
            held.len() < 16,
            "6 GiB of address space held 16 GiB of buffers"
        );
    };
    match error {
        Error::OutOfMemory {
            requested, kind, ..
        } => {
            assert_eq!((requested, kind), (block, MemoryKind::Device));
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert_eq!(ctx.stats().out_of_memory_errors, 1);
    assert_eq!(ctx.stats().reserved, held.len() as u64 * block);
    for h in held {
        ctx.release(h).expect("release");
    }
    let data = random_bytes(MIB as usize, 9);
    let h = ctx
        .alloc(AllocDesc::new("after", MIB))
        .expect("alloc after OOM");
    ctx.upload(h, &data).expect("upload");
    assert!(ctx.download(h).expect("download") == data);
    ctx.release(h).expect("release");
    println!("OOM-CHILD-OK after {} GiB", ctx.stats().peak_reserved >> 30);
}

fn unified_memory_is_host_and_kernel_visible<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let n = 50_000u32;
    let bytes = u64::from(n) * 4;
    let xs = match ctx.alloc(AllocDesc::new("x", bytes).kind(MemoryKind::Unified)) {
        Ok(h) => h,
        Err(Error::Unsupported { reason, .. }) if !is_lavapipe(&ctx) => {
            eprintln!("SKIPPED unified_memory: {reason}");
            return;
        }
        Err(e) => panic!("lavapipe offers mappable storage buffers: {e}"),
    };
    let ys = ctx
        .alloc(AllocDesc::new("y", bytes).kind(MemoryKind::Unified))
        .expect("alloc");
    let x = random_floats(n as usize, 4);
    ctx.upload(xs, bytemuck::cast_slice(&x)).expect("upload");
    assert_eq!(ctx.stats().staging, 0, "unified memory needs no staging");
    kernels::scale(&ctx, xs, ys, -3.0, 0.5).expect("dispatch");
    check_scale(&floats(&ctx.download(ys).expect("download")), &x, -3.0, 0.5);
    // Host writes after a kernel, then another kernel, keep order.
    ctx.transfers()
        .upload_at(xs, 4, &2.0f32.to_le_bytes())
        .expect("upload");
    kernels::scale(&ctx, xs, ys, -3.0, 0.5).expect("dispatch");
    let y = floats(&ctx.download(ys).expect("download"));
    assert_eq!(y[1], -5.5);
    assert_eq!(ctx.stats().kind(MemoryKind::Unified).allocations, 2);
    // Advice is accepted on unified memory (and steers migration on CUDA); results stay right.
    ctx.memory()
        .advise(xs, MemoryAdvice::ReadMostly)
        .expect("advise");
    ctx.memory()
        .advise(ys, MemoryAdvice::PreferDevice)
        .expect("advise");
    kernels::scale(&ctx, xs, ys, 2.0, 0.0).expect("dispatch");
    let y = floats(&ctx.download(ys).expect("download"));
    assert_eq!(y[1], 4.0);
    assert_eq!(y[0], 2.0 * x[0]);
    ctx.memory()
        .advise(ys, MemoryAdvice::PreferHost)
        .expect("advise");
    ctx.transfers()
        .upload_at(ys, 0, &7.0f32.to_le_bytes())
        .expect("upload");
    assert_eq!(floats(&ctx.download(ys).expect("download"))[0], 7.0);
    let dev = ctx.alloc(AllocDesc::new("dev", 64)).expect("alloc");
    assert!(matches!(
        ctx.memory().advise(dev, MemoryAdvice::ReadMostly),
        Err(Error::InvalidParameter { .. })
    ));
    ctx.release(dev).expect("release");
    ctx.release(xs).expect("release");
    ctx.release(ys).expect("release");
}

fn invalid_shader_and_oversized_binding_are_typed_errors<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    // SAFETY: neither twin compiles, so neither runs.
    let bad = unsafe {
        KernelSource::new(
            "broken",
            "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }",
            "main",
        )
        .with_cuda("extern \"C\" __global__ void main() { int x = ; }")
    };
    let h = ctx.alloc(AllocDesc::new("h", 16)).expect("alloc");
    match ctx.dispatch(&bad, &[h], &[], [1, 1, 1]) {
        Err(Error::Shader { label, message }) => {
            assert_eq!(label, "broken");
            assert!(!message.is_empty());
        }
        other => panic!("expected Shader, got {other:?}"),
    }
    // Valid WGSL whose CUDA twin does not compile: the CUDA backend reports NVRTC's log.
    // SAFETY: as above.
    let bad_cuda = unsafe {
        KernelSource::new(
            "broken twin",
            "@compute @workgroup_size(1) fn twin() {}",
            "twin",
        )
        .with_cuda("extern \"C\" __global__ void twin() { undeclared = 1; }")
    };
    match ctx.dispatch(&bad_cuda, &[], &[], [1, 1, 1]) {
        Err(Error::Shader { message, .. }) if is_cuda(&ctx) => {
            assert!(message.contains("undeclared"), "{message}");
        }
        Ok(_) if !is_cuda(&ctx) => {}
        other => panic!("unexpected {other:?}"),
    }
    let odd = ctx.alloc(AllocDesc::new("odd", 12)).expect("alloc");
    assert!(matches!(
        kernels::scale(&ctx, h, odd, 1.0, 0.0),
        Err(Error::ShapeMismatch { .. })
    ));
    ctx.release(odd).expect("release");
    let max = ctx.backend().limits().max_binding_size;
    let big = ctx
        .alloc(AllocDesc::new("big", max + 4).uninit())
        .expect("alloc");
    assert!(matches!(
        ctx.dispatch(&shaders::SCALE, &[big, h], &[0; 16], [1, 1, 1]),
        Err(Error::TooLarge { .. })
    ));
    ctx.submit().expect("nothing bad was recorded");
    for x in [h, big] {
        ctx.release(x).expect("release");
    }
}

#[test]
fn a_lost_device_turns_calls_into_device_lost() {
    let Some(ctx) = try_gpu("device_lost", ContextDesc::default()) else {
        return;
    };
    let h = ctx.alloc(AllocDesc::new("h", 1024)).expect("alloc");
    ctx.backend().device().destroy();
    // The loss is reported through a callback, run while the device is polled.
    let _ = ctx.backend().device().poll(vramkit::wgpu::PollType::Poll);
    assert!(matches!(
        ctx.alloc(AllocDesc::new("x", 64)),
        Err(Error::DeviceLost { .. })
    ));
    assert!(matches!(
        ctx.upload(h, &[1; 8]),
        Err(Error::DeviceLost { .. })
    ));
    assert!(matches!(ctx.download(h), Err(Error::DeviceLost { .. })));
    let e = ctx.wait().expect_err("lost");
    assert!(e.to_string().contains("create a new context"), "{e}");
    // Dropping the context afterwards does not panic.
    drop(ctx);
    let Some(fresh) = try_gpu("device_lost (fresh context)", ContextDesc::default()) else {
        return;
    };
    let h = fresh
        .alloc(AllocDesc::new("h", 8))
        .expect("a new context works");
    fresh.release(h).expect("release");
}

/// Under a release threshold of 0, a block whose memory pending work still uses stays until that
/// work completes (a release never waits for the GPU), and goes at the next release after it.
fn blocks_go_back_only_after_their_work<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        release_threshold: 0,
        ..Default::default()
    });
    let (_, bytes, x, xs, ys) = uploaded_pair(&ctx, 3);
    kernels::scale(&ctx, xs, ys, 2.0, 1.0).expect("dispatch");
    ctx.release(xs).expect("release");
    let y = floats(&ctx.download(ys).expect("download"));
    check_scale(&y, &x, 2.0, 1.0);
    ctx.release(ys).expect("release");
    if !is_cuda(&ctx) {
        // The download submitted and waited: the blocks' work is done, they went back.
        let s = ctx.stats();
        assert_eq!(
            s.reserved, s.staging,
            "{} B kept past the threshold",
            s.cached_free
        );
    }
    let a = ctx.alloc(AllocDesc::new("a", bytes)).expect("alloc");
    let b = ctx.alloc(AllocDesc::new("b", bytes)).expect("alloc");
    kernels::scale(&ctx, a, b, 1.0, 0.0).expect("dispatch");
    ctx.release(a).expect("release");
    ctx.release(b).expect("release");
    if !is_cuda(&ctx) {
        // wgpu holds the kernel in an open submission: it has not run (CUDA may have run it).
        let s = ctx.stats();
        assert!(
            s.reserved > s.staging,
            "a block went back while a recorded kernel still uses it"
        );
    }
    ctx.wait().expect("wait");
    // (`uninit`: a zeroed one would record a clear, which is work on its block again.)
    let c = ctx.alloc(AllocDesc::new("c", 256).uninit()).expect("alloc");
    ctx.release(c).expect("release");
    let s = ctx.stats();
    assert_eq!(
        s.reserved, s.staging,
        "{} B kept after the work completed",
        s.cached_free
    );
}

/// Work recorded without a submit in between (a loop of launches, a compaction pass sliding in
/// pieces) is submitted in bounded batches: one open submission of thousands of passes left
/// as many command buffers pooled in wgpu for good (the process grew by gigabytes under
/// concurrent compaction). The launches' indices say where the batches end, and every launch
/// still runs, in order.
#[test]
fn long_runs_of_launches_are_submitted_in_bounded_batches() {
    let Some(ctx) = try_gpu("bounded batches", ContextDesc::default()) else {
        return;
    };
    let n = 64u32;
    let x = ctx
        .alloc(AllocDesc::new("x", u64::from(n) * 4))
        .expect("alloc");
    ctx.upload(x, &vec![0u8; n as usize * 4]).expect("upload");
    let add = KernelSource::owned(
        "add one",
        "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64)
fn add(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&x)) { x[id.x] = x[id.x] + 1.0; }
}",
        "add",
    );
    let launches = 1000;
    let indices: Vec<u64> = (0..launches)
        .map(|_| {
            ctx.dispatch(&add, &[x], &[], [1, 1, 1])
                .expect("launch")
                .index()
        })
        .collect();
    let batches = indices.windows(2).filter(|w| w[0] != w[1]).count() + 1;
    assert!(
        batches >= 3,
        "1000 launches went out in {batches} submission(s): batches are unbounded"
    );
    let ys = floats(&ctx.download(x).expect("download"));
    assert!(
        ys.iter().all(|&y| y == launches as f32),
        "every launch ran: {:?}",
        &ys[..4]
    );
}
