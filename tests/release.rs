//! The release threshold (`ContextDesc::release_threshold`): what stays cached after releases,
//! on host memory and on the GPU. (Queue-order reuse and blocks waiting for their work are in
//! `gpu.rs`.)

mod common;

use common::Mk;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc};

const MIB: u64 = 1 << 20;

backend_tests!(
    release_threshold_caps_cached_memory,
    a_budget_below_one_granule_still_serves_staging_and_frames,
);

fn release_threshold_caps_cached_memory<B: Backend>(mk: Mk<B>) {
    let cycle = |ctx: &Context<B>| {
        let hs: Vec<_> = [4 * MIB, 4 * MIB, 12 * MIB, 16 << 10]
            .iter()
            .map(|&n| ctx.alloc(AllocDesc::new("t", n).uninit()).expect("alloc"))
            .collect();
        let peak = ctx.stats().reserved;
        for h in hs {
            ctx.release(h).expect("release");
        }
        peak
    };
    // Default: every freed byte stays cached for the next request.
    let keep = mk(ContextDesc::default());
    let peak = cycle(&keep);
    let s = keep.stats();
    assert_eq!(s.reserved, peak, "the default keeps what it cached");
    assert_eq!(s.cached_free, s.reserved - s.staging);
    keep.memory().trim().expect("trim");
    assert_eq!(keep.stats().reserved, keep.stats().staging);
    // A threshold of 0: nothing stays cached once no work uses it.
    let none = mk(ContextDesc {
        release_threshold: 0,
        ..Default::default()
    });
    cycle(&none);
    let s = none.stats();
    assert_eq!(s.reserved, s.staging, "{} B still cached", s.cached_free);
    // 8 MiB: what is cached stays at or under the threshold.
    let some = mk(ContextDesc {
        release_threshold: 8 * MIB,
        ..Default::default()
    });
    cycle(&some);
    let s = some.stats();
    assert!(
        s.cached_free <= 8 * MIB,
        "{} B cached over 8 MiB",
        s.cached_free
    );
    some.observe().audit().check().expect("audit");
}

/// Under a budget smaller than a segment's growth granule (2 MiB), a segment still gives its
/// free end back for staging and other frames (CUDA segments once kept it, and the 4K tool's
/// tiles failed under 600 KB budgets).
fn a_budget_below_one_granule_still_serves_staging_and_frames<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(600_000),
        staging_chunk: 64 << 10,
        staging_slots: 2,
        ..Default::default()
    });
    for round in 0..3u8 {
        for size in [344_432u64, 120_000, 300_000, 71_000] {
            let h = ctx
                .alloc(AllocDesc::new("frame", size).uninit())
                .unwrap_or_else(|e| panic!("round {round}, {size} B: {e}"));
            let data = vec![round; size as usize];
            ctx.upload(h, &data).expect("upload");
            assert!(ctx.download(h).expect("download") == data);
            ctx.release(h).expect("release");
        }
        ctx.memory().trim().expect("trim");
        assert!(ctx.stats().reserved <= 600_000);
    }
}
