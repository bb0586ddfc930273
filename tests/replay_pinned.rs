//! Every stored PyTorch allocation trace replayed as the C ABI serves PyTorch: nothing moves
//! (PyTorch holds raw pointers), free pages follow the live set, and no budget. The memory held
//! never passes 1.02 × the trace's live peak: the slack bounds it even where no budget does.

#[path = "../benches/common/replay.rs"]
mod replay;

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::{Context, ContextDesc};

#[test]
fn pinned_replays_hold_at_most_1_02_times_the_live_peak() {
    replay::PINNED.store(true, std::sync::atomic::Ordering::Relaxed);
    let paths = replay::stored();
    assert!(paths.len() >= 5, "the traces are missing: {paths:?}");
    for path in paths {
        let trace = replay::load(&path).expect("trace");
        let ctx = Context::with_backend(
            HostBackend::new(HostConfig {
                keep_bytes: false,
                ..Default::default()
            }),
            replay::pinned_desc(ContextDesc::default()),
        );
        let out = replay::replay(&ctx, &trace, false);
        let ratio = out.peak_reserved as f64 / trace.live_peak as f64;
        eprintln!(
            "{}: reserved peak {} B ({ratio:.4} x), pages moved {} B",
            trace.name, out.peak_reserved, out.pages.moved_bytes
        );
        assert!(out.completed, "{}: {:?}", trace.name, out.error);
        assert!(
            out.peak_reserved * 100 <= trace.live_peak * 102,
            "{}: held {ratio:.4} x its live peak",
            trace.name
        );
        ctx.observe()
            .audit()
            .check()
            .expect("audit after the replay");
        assert_eq!(ctx.stats().live, 0);
    }
}

/// Resetting the peaks a program reads (as `torch.cuda.reset_peak_memory_stats` every step
/// does) changes nothing the allocator does: the same trace maps, moves and gives back the
/// same pages, takes the same blocks and ends holding the same memory with and without it.
#[test]
fn resetting_the_peaks_read_changes_nothing_the_allocator_does() {
    replay::PINNED.store(true, std::sync::atomic::Ordering::Relaxed);
    let path = replay::stored()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("live_moe"))
        .expect("the live_moe trace");
    let trace = replay::load(&path).expect("trace");
    let run = |reset_every: usize| {
        let ctx = Context::with_backend(
            HostBackend::new(HostConfig {
                keep_bytes: false,
                ..Default::default()
            }),
            replay::pinned_desc(ContextDesc::default()),
        );
        let mut handles = Vec::with_capacity(trace.allocations);
        for (n, op) in trace.ops.iter().enumerate() {
            if reset_every > 0 && n % reset_every == 0 {
                ctx.observe().reset_peaks();
            }
            match *op {
                replay::Op::Alloc(size) => {
                    let desc = vramkit::AllocDesc::new("replay", size).uninit().immovable();
                    handles.push(Some(ctx.alloc(desc).expect("alloc")));
                }
                replay::Op::Free(i) => {
                    let h = handles[i as usize].take().expect("a live handle");
                    ctx.release(h).expect("release");
                }
            }
        }
        let s = ctx.stats();
        (s.pages, s.block_allocations, s.reserved, s.in_use)
    };
    let plain = run(0);
    assert!(
        plain.0.pages > 0,
        "the trace moves no page: it checks nothing"
    );
    assert_eq!(run(97), plain);
}
