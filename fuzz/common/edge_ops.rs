//! Random sequences over the library's edges on the host backend, from fuzzer bytes: device
//! pointers leased and held across releases, budgets set and changed under live memory,
//! compaction, zeroed allocations, and runtime kernels with random interfaces (workgroup
//! sizes, workgroup memory, fixed arrays, structs). Shared by the fuzz target `edge_ops` and
//! the stable test that replays its corpus (`tests/fuzz_corpus.rs`). Panics on:
//! - any contents differing from the model (compaction moves what is not leased);
//! - a range handed out while a lease on it lives;
//! - a zeroed allocation that does not read zero;
//! - a budget refusal whose `fits_now` is not true (that many bytes must then pass the budget);
//! - a kernel launch answered otherwise than its workgroup size, its workgroup memory and the
//!   device's limits say (the host builds no kernels, so bindings are checked on a GPU);
//! - an audit that is not clean.

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::{KernelSource, Storage};
use vramkit::interop::DeviceLease;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error, ErrorKind};

#[path = "reader.rs"]
mod reader;

use reader::{refusal, Bytes};

/// A live allocation of the model.
struct Live {
    h: BufferHandle,
    bytes: Vec<u8>,
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

/// The WGSL of a one-binding kernel and the least bytes its binding needs: the binding's
/// type from `shape` (a runtime array; a fixed array of `n` f32; a struct of `n` vec4 and a
/// runtime tail), `words` f32 of workgroup memory, a workgroup of `size`.
fn kernel(shape: u8, n: u64, words: u64, size: [u64; 2]) -> (String, u64) {
    let (decl, min, body) = match shape % 3 {
        0 => (
            "var<storage, read_write> x: array<f32>;".to_string(),
            4,
            "x[i] = 1.0;",
        ),
        1 => (
            format!("var<storage, read_write> x: array<f32, {n}>;"),
            4 * n,
            "x[i % {n}u] = 1.0;",
        ),
        _ => (
            format!(
                "var<storage, read_write> x: S;\nstruct S {{ head: array<vec4<f32>, {n}>, tail: \
                 array<f32> }}"
            ),
            // The fixed part and one element of the tail, rounded to the struct's 16 bytes.
            (16 * n + 4).next_multiple_of(16),
            "x.tail[i] = x.head[0].x;",
        ),
    };
    let body = body.replace("{n}", &n.to_string());
    let (shared, use_shared) = if words > 0 {
        (
            format!("var<workgroup> t: array<f32, {words}>;"),
            format!("t[i % {words}u] = 2.0; workgroupBarrier();"),
        )
    } else {
        (String::new(), String::new())
    };
    let wgsl = format!(
        "@group(0) @binding(0) {decl}
{shared}
@compute @workgroup_size({}, {})
fn k(@builtin(local_invocation_index) i: u32) {{
    {use_shared}
    {body}
}}
",
        size[0], size[1]
    );
    (wgsl, min)
}

/// Runs the operations `data` describes. Panics where vramkit disagrees with the model.
pub fn run(data: &[u8]) {
    let mut b = Bytes(data);
    let setup = b.u8();
    let desc = ContextDesc {
        budget: (setup & 1 == 1).then(|| 64 * 1024 + b.u32() % (16 << 20)),
        block_size: (setup & 2 == 2).then(|| 1 + b.u32() % (4 << 20)),
        follow_live: setup & 4 == 4,
        ..Default::default()
    };
    let backend = HostBackend::new(HostConfig {
        // Leases need stable addresses: fixed blocks, or segments in reserved address space.
        resizable: setup & 8 == 8,
        reserve: (setup & 8 == 8).then_some(64 << 20),
        capacity: Some(1 + b.u32() % (48 << 20)),
        ..Default::default()
    });
    let limits = backend.limits().clone();
    let ctx = Context::with_backend(backend, desc);
    let mut live: Vec<Live> = Vec::new();
    let mut held: Vec<DeviceLease> = Vec::new();
    let mut step = 0u32;
    while !b.done() && step < 1_000 {
        step += 1;
        let op = b.u8() % 9;
        match op {
            0 | 1 => {
                let size = 1 + b.u32() % (2 << 20);
                let zeroed = b.u8() & 1 == 0;
                let mut desc = AllocDesc::new("edge", size);
                if !zeroed {
                    desc = desc.uninit();
                }
                match ctx.alloc(desc) {
                    Ok(h) => {
                        let bytes = if zeroed {
                            let got = ctx.download(h);
                            match got {
                                Ok(got) => assert!(
                                    got.iter().all(|&x| x == 0),
                                    "step {step}: a zeroed allocation of {size} bytes is not zero"
                                ),
                                Err(e) if refusal(&e) => {}
                                Err(e) => panic!("step {step}: download: {e}"),
                            }
                            vec![0; size as usize]
                        } else {
                            let fill = vec![b.u8(); size as usize];
                            if let Err(e) = ctx.upload(h, &fill) {
                                assert!(refusal(&e), "step {step}: upload: {e}");
                                ctx.release(h).expect("release");
                                continue;
                            }
                            fill
                        };
                        // Where the new range lies must be free of every live lease.
                        if let Ok(lease) = ctx.interop().device_ptr(h) {
                            let range = (lease.address, lease.size);
                            for l in &held {
                                assert!(
                                    !overlaps(range, (l.address, l.size)),
                                    "step {step}: {range:?} ({:?}) was handed out under a live \
                                     lease of {:?}",
                                    ctx.observe().allocation_info(h),
                                    (l.address, l.size)
                                );
                            }
                            // Kept a moment only: pinned, but the lease ends here.
                            drop(lease);
                        }
                        live.push(Live { h, bytes });
                    }
                    Err(Error::OverBudget { fits_now, .. }) => {
                        // A true figure: that many bytes fit now.
                        if fits_now > 0 && fits_now < (4 << 20) {
                            // The budget takes it; the device may still be out of memory.
                            match ctx.alloc(AllocDesc::new("fits now", fits_now).uninit()) {
                                Ok(h) => ctx.release(h).expect("release"),
                                Err(Error::OutOfMemory { .. }) => {}
                                Err(e) => {
                                    panic!("step {step}: fits_now said {fits_now} bytes fit: {e}")
                                }
                            }
                        }
                    }
                    Err(e) if refusal(&e) => {}
                    Err(e) => panic!("step {step}: alloc {size}: {e}"),
                }
            }
            2 => {
                if !live.is_empty() {
                    let i = b.u8() as usize % live.len();
                    // Leased or not: a leased range stays out of reuse until its lease ends.
                    let l = live.swap_remove(i);
                    ctx.release(l.h).expect("release a live handle");
                }
            }
            3 => {
                if !live.is_empty() {
                    let i = b.u8() as usize % live.len();
                    let lease = ctx
                        .interop()
                        .device_ptr(live[i].h)
                        .expect("device_ptr of a live handle");
                    assert_eq!(lease.size, live[i].bytes.len() as u64);
                    held.push(lease);
                }
            }
            4 => {
                if !held.is_empty() {
                    let i = b.u8() as usize % held.len();
                    drop(held.swap_remove(i));
                }
            }
            5 => {
                ctx.memory()
                    .compact(b.u32() << (b.u8() % 12))
                    .expect("compact");
            }
            6 => {
                let budget = match b.u8() % 3 {
                    0 => None,
                    1 => Some(ctx.stats().reserved + b.u32() % (4 << 20)),
                    _ => Some(b.u32() % (16 << 20)),
                };
                match ctx.memory().set_budget(budget) {
                    Ok(()) => {}
                    Err(e) => assert!(
                        matches!(
                            e.kind(),
                            ErrorKind::OverBudget | ErrorKind::InvalidParameter
                        ),
                        "step {step}: set_budget: {e}"
                    ),
                }
            }
            7 => {
                if !live.is_empty() {
                    let i = b.u8() as usize % live.len();
                    let shape = b.u8();
                    let n = 1 + b.u16() % 4096;
                    let words = match b.u8() % 3 {
                        0 => 0,
                        1 => 1 + b.u16() % 4096,
                        _ => 1 + b.u32() % (1 << 16),
                    };
                    let size = [1 + b.u16() % 1100, 1 + u64::from(b.u8() % 4)];
                    let (wgsl, min) = kernel(shape, n, words, size);
                    let source = KernelSource::owned(format!("edge {step}"), wgsl, "k");
                    let r = ctx.dispatch(&source, &[live[i].h], &[], [1, 1, 1]);
                    let over_size = size[0] > u64::from(limits.max_workgroup_size[0])
                        || size[1] > u64::from(limits.max_workgroup_size[1])
                        || size[0] * size[1] > u64::from(limits.max_invocations);
                    let over_shared = 4 * words > u64::from(limits.max_workgroup_storage);
                    let e = r.expect_err("the host runs no kernels");
                    let want = if over_size {
                        ErrorKind::InvalidParameter
                    } else if over_shared {
                        ErrorKind::TooLarge
                    } else {
                        // The host compiles nothing, and the binding check comes after the
                        // build: a binding shorter than `min` is a ShapeMismatch on a GPU
                        // (tests/runtime_kernel.rs on lavapipe), here the host's refusal.
                        let _ = min;
                        ErrorKind::Unsupported
                    };
                    assert_eq!(e.kind(), want, "step {step}: {e}");
                }
            }
            _ => {
                // Every live allocation still holds its bytes.
                if !live.is_empty() {
                    let i = b.u8() as usize % live.len();
                    match ctx.download(live[i].h) {
                        Ok(got) => assert!(got == live[i].bytes, "step {step}: contents differ"),
                        Err(e) if refusal(&e) => {}
                        Err(e) => panic!("step {step}: download: {e}"),
                    }
                }
            }
        }
        if let Err(e) = ctx.observe().audit().check() {
            panic!("step {step}: {e}");
        }
    }
    ctx.memory().set_budget(None).expect("budget");
    // Largest first, each released once read: the staging a download needs fits sooner.
    live.sort_by_key(|l| std::cmp::Reverse(l.bytes.len()));
    let mut unread = Vec::new();
    for round in 0..2 {
        for l in std::mem::take(&mut live) {
            match ctx.download(l.h) {
                Ok(got) => assert!(got == l.bytes, "contents differ at the end"),
                // The device's capacity leaves no room for staging yet: after the others.
                Err(e) if refusal(&e) && round == 0 => {
                    unread.push(l);
                    continue;
                }
                Err(e) if refusal(&e) => {}
                Err(e) => panic!("download at the end: {e}"),
            }
            ctx.release(l.h).expect("release");
        }
        live = std::mem::take(&mut unread);
    }
    drop(held);
    ctx.memory().trim().expect("trim");
    assert_eq!(ctx.stats().in_use, 0);
}
