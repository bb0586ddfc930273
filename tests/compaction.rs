//! Compaction keeps every byte and every promise, on every backend: random allocations holding
//! random data, random releases, uploads and kernel dispatches (whose inputs are released while
//! the kernel may still run), and compaction at random points, explicit and triggered by the
//! budget. After each compaction every allocation's content is checked against a CPU model,
//! immovable allocations are checked to be where they were made, and the budget is checked
//! against the counters and against every event of the timeline.

mod common;

use common::Mk;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error};

const MIB: u64 = 1 << 20;

backend_tests!(compaction_keeps_every_byte);

/// The same on host memory with fixed blocks (as on wgpu), where compaction empties blocks
/// instead of sliding inside a growing segment.
#[test]
fn fixed_blocks_compaction_keeps_every_byte() {
    compaction_keeps_every_byte(&|d| {
        Context::with_backend(
            HostBackend::new(HostConfig {
                resizable: false,
                ..Default::default()
            }),
            d,
        )
    });
}

struct Live {
    handle: BufferHandle,
    data: Vec<f32>,
    /// Where an immovable allocation was made.
    pinned_at: Option<(u64, u64)>,
}

fn values(rng: &mut StdRng, n: usize) -> Vec<f32> {
    // Small integers: sums stay exact in f32 for as many kernels as the test runs.
    (0..n).map(|_| rng.random_range(0..1000) as f32).collect()
}

/// Words in a new allocation: mostly small, some large enough to take most of a block.
fn words(rng: &mut StdRng) -> usize {
    if rng.random_bool(0.75) {
        rng.random_range(1..16 << 10)
    } else {
        rng.random_range(256 << 10..2 << 20)
    }
}

fn bytes(v: &[f32]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Allocates and fills `data`, or `None` when the budget refuses (nothing is left behind).
fn make<B: Backend>(ctx: &Context<B>, data: &[f32], immovable: bool) -> Option<BufferHandle> {
    let desc = AllocDesc::new("t", 4 * data.len() as u64).uninit();
    let desc = if immovable { desc.immovable() } else { desc };
    let h = match ctx.alloc(desc) {
        Ok(h) => h,
        Err(Error::OverBudget { .. }) => return None,
        Err(e) => panic!("alloc: {e}"),
    };
    match ctx.upload(h, bytes(data)) {
        Ok(()) => Some(h),
        Err(Error::OverBudget { .. }) => {
            ctx.release(h).expect("release");
            None
        }
        Err(e) => panic!("upload: {e}"),
    }
}

fn verify<B: Backend>(ctx: &Context<B>, live: &[Live], when: &str) {
    for (i, l) in live.iter().enumerate() {
        let back = ctx.download(l.handle).expect("download");
        assert!(
            back == bytes(&l.data),
            "{when}: allocation {i} ({} B) lost its content",
            back.len()
        );
        if let Some(at) = l.pinned_at {
            let info = ctx.observe().allocation_info(l.handle).expect("info");
            assert_eq!(
                (info.block, info.offset),
                at,
                "{when}: an immovable allocation moved"
            );
        }
    }
    ctx.observe()
        .audit()
        .check()
        .unwrap_or_else(|e| panic!("{when}: {e}"));
}

fn compaction_keeps_every_byte<B: Backend>(mk: Mk<B>) {
    let budget = 40 * MIB;
    let ctx = mk(ContextDesc {
        budget: Some(budget),
        block_size: Some(8 * MIB),
        staging_chunk: MIB,
        staging_slots: 2,
        ..Default::default()
    });
    let host = ctx.adapter_info().api == "host";
    // Fewer in a debug build (`make test-debug`), whose byte-by-byte checks run ~20× slower.
    let steps = match (host, cfg!(debug_assertions)) {
        (true, false) => 3000,
        (true, true) => 300,
        (false, false) => 400,
        (false, true) => 100,
    };
    ctx.observe().start_trace(1 << 20);
    let mut rng = StdRng::seed_from_u64(0xc0_4ac7);
    let mut live: Vec<Live> = Vec::new();
    let (mut explicit, mut triggered, mut kernels) = (0, 0, 0);
    for step in 0..steps {
        let passes = ctx.stats().compaction.passes;
        let op = rng.random_range(0..10);
        match op {
            0..=3 => {
                let n = words(&mut rng);
                let data = values(&mut rng, n);
                let immovable = rng.random_bool(0.1);
                if let Some(handle) = make(&ctx, &data, immovable) {
                    let pinned_at = immovable.then(|| {
                        let info = ctx.observe().allocation_info(handle).expect("info");
                        (info.block, info.offset)
                    });
                    live.push(Live {
                        handle,
                        data,
                        pinned_at,
                    });
                }
            }
            4..=6 if !live.is_empty() => {
                let l = live.swap_remove(rng.random_range(0..live.len()));
                ctx.release(l.handle).expect("release");
            }
            7 if !live.is_empty() => {
                // y += x on the device; x is released at once, while the kernel may still run.
                let i = rng.random_range(0..live.len());
                let x = values(&mut rng, live[i].data.len());
                if let Some(hx) = make(&ctx, &x, false) {
                    let ran = match vramkit_kernels::axpy(&ctx, 1.0, hx, live[i].handle) {
                        Ok(_) => true,
                        // The host backend runs no kernels.
                        Err(Error::Unsupported { .. }) if host => false,
                        Err(e) => panic!("axpy: {e}"),
                    };
                    ctx.release(hx).expect("release");
                    if ran {
                        for (y, x) in live[i].data.iter_mut().zip(&x) {
                            *y += x;
                        }
                        kernels += 1;
                    }
                }
            }
            8 if !live.is_empty() => {
                let i = rng.random_range(0..live.len());
                let l = &mut live[i];
                let at = rng.random_range(0..l.data.len());
                let len = rng.random_range(1..=(l.data.len() - at).min(4096));
                let v = values(&mut rng, len);
                match ctx
                    .transfers()
                    .upload_at(l.handle, 4 * at as u64, bytes(&v))
                {
                    Ok(()) => l.data[at..at + len].copy_from_slice(&v),
                    Err(Error::OverBudget { .. }) => {}
                    Err(e) => panic!("upload_at: {e}"),
                }
            }
            9 => {
                let max = if rng.random_bool(0.5) {
                    u64::MAX
                } else {
                    rng.random_range(MIB..16 * MIB)
                };
                let report = ctx.memory().compact(max).expect("compact");
                assert!(report.bytes_moved <= max, "a pass moved past its bound");
                explicit += 1;
                verify(&ctx, &live, &format!("step {step}, after compact({max})"));
            }
            _ => {}
        }
        if op != 9 && ctx.stats().compaction.passes != passes {
            triggered += 1;
            verify(&ctx, &live, &format!("step {step}, after a compaction"));
        }
        let s = ctx.stats();
        assert!(
            s.reserved <= budget,
            "step {step}: {} B over the budget",
            s.reserved
        );
    }
    verify(&ctx, &live, "at the end");
    let s = ctx.stats();
    eprintln!(
        "{steps} steps, {} live, {kernels} kernels, {explicit} explicit compactions, \
         {triggered} compactions for the budget; {} passes moved {} allocations, {} B",
        live.len(),
        s.compaction.passes,
        s.compaction.allocations_moved,
        s.compaction.bytes_moved
    );
    assert!(
        s.compaction.allocations_moved > if cfg!(debug_assertions) { 10 } else { 100 },
        "the test must move allocations"
    );
    assert!(
        host || kernels > if cfg!(debug_assertions) { 2 } else { 10 },
        "the test must run kernels"
    );
    assert!(s.peak_reserved <= budget);
    let trace = ctx.observe().stop_trace().expect("trace");
    assert_eq!(trace.dropped, 0);
    assert!(
        trace.events.iter().all(|e| e.reserved <= budget),
        "the timeline went over the budget"
    );
    for l in live {
        ctx.release(l.handle).expect("release");
    }
    ctx.memory().trim().expect("trim");
    assert_eq!(ctx.stats().reserved, ctx.stats().staging);
}

/// Found in review: compacting a context whose only block was emptied, a `block_size` above
/// 256 MiB, and `max_batch` of a size that cannot be rounded must not panic.
#[test]
fn edge_cases_of_compaction_and_geometry_do_not_panic() {
    let ctx = Context::host(ContextDesc::default());
    let h = ctx.alloc(AllocDesc::new("a", 1 << 20)).expect("alloc");
    ctx.release(h).expect("release");
    let report = ctx
        .memory()
        .compact(u64::MAX)
        .expect("compact of an empty segment");
    assert_eq!(ctx.stats().reserved, ctx.stats().staging);
    assert!(report.bytes_freed > 0);
    ctx.observe().audit().check().expect("audit");
    let h = ctx
        .alloc(AllocDesc::new("again", 1 << 20))
        .expect("alloc after");
    ctx.upload(h, &[5; 64]).expect("upload");
    assert_eq!(ctx.download(h).expect("download")[..64], [5; 64]);
    ctx.release(h).expect("release");

    let big = Context::host(ContextDesc {
        block_size: Some(512 << 20),
        ..Default::default()
    });
    let h = big.alloc(AllocDesc::new("b", 1 << 20)).expect("alloc");
    big.release(h).expect("release");
    assert_eq!(big.memory().max_batch(u64::MAX - 1).expect("max_batch"), 0);
}
