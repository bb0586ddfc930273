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
