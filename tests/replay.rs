//! Every stored PyTorch allocation trace (`benches/traces/`) replays to the end on the memory
//! manager alone (the null host device, growing segments as on CUDA) under a budget of 1.02 ×
//! the trace's live peak, with the context audited (counters recounted, layout re-derived) along
//! the way. PyTorch's own allocator needs 1.02–1.42 × on the same traces (see BENCHMARKS.md).

#[path = "../benches/common/replay.rs"]
mod replay;

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::{Context, ContextDesc};

#[test]
fn every_stored_trace_completes_under_1_02_times_its_live_peak() {
    let paths = replay::stored();
    assert!(paths.len() >= 5, "the traces are missing: {paths:?}");
    for path in paths {
        let trace = replay::load(&path).expect("trace");
        let budget = trace.live_peak * 102 / 100;
        let ctx = Context::with_backend(
            HostBackend::new(HostConfig {
                keep_bytes: false,
                ..Default::default()
            }),
            ContextDesc {
                budget: Some(budget),
                ..Default::default()
            },
        );
        let out = replay::replay_checked(&ctx, &trace, false, 25_000);
        eprintln!(
            "{}: {} allocations, live peak {} B, reserved peak {} B ({:.4} x), {} block \
             allocations, {} compaction passes moving {} B",
            trace.name,
            trace.allocations,
            trace.live_peak,
            out.peak_reserved,
            out.peak_reserved as f64 / trace.live_peak as f64,
            out.block_allocations,
            out.compaction_passes,
            out.compaction_bytes
        );
        assert!(out.completed, "{}: {:?}", trace.name, out.error);
        assert!(out.peak_reserved <= budget);
        ctx.observe()
            .audit()
            .check()
            .expect("audit after the replay");
        assert_eq!(ctx.stats().live, 0);
    }
}
