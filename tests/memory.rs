//! The memory manager's behaviour, written once and run on host memory and on the GPU.

mod common;

use std::collections::HashMap;

use common::{random_bytes, Mk};
use rand::{Rng, SeedableRng};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Error, MemoryKind, StaleReason};

const MIB: u64 = 1 << 20;

backend_tests!(
    round_trips_of_many_sizes,
    live_allocations_never_overlap,
    reused_memory_arrives_zeroed,
    stale_double_and_foreign_handles,
    over_budget_reports_figures_and_recovers,
    zero_and_oversized_requests,
    partial_transfers_keep_neighbours,
    streams_from_a_reader,
    threads_allocate_and_release_under_load,
    trim_returns_everything,
);

#[test]
fn contexts_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Context<vramkit::backend::host::HostBackend>>();
    send_sync::<Context<vramkit::backend::wgpu::WgpuBackend>>();
    send_sync::<vramkit::BufferHandle>();
    #[cfg(feature = "cuda")]
    send_sync::<Context<vramkit::backend::cuda::CudaBackend>>();
}

fn round_trips_of_many_sizes<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let chunk = 4 * MIB;
    let sizes = [
        1,
        3,
        4,
        255,
        256,
        257,
        4095,
        65_537,
        MIB + 3,
        chunk,
        chunk + 1,
        4 * chunk - 2,
        17 * MIB + 5,
        33_177_600,
        70 * MIB + 1,
        300 * MIB,
    ];
    for (i, &size) in sizes.iter().enumerate() {
        let data = random_bytes(size as usize, i as u64);
        let h = ctx
            .alloc(AllocDesc::new("round trip", size))
            .expect("alloc");
        ctx.upload(h, &data).expect("upload");
        let back = ctx.download(h).expect("download");
        assert!(back == data, "round trip of {size} bytes differs");
        ctx.release(h).expect("release");
    }
    let s = ctx.stats();
    assert_eq!((s.live, s.in_use, s.requested), (0, 0, 0));
    assert_eq!(s.allocations, sizes.len() as u64);
}

/// Checks from offsets that no two live allocations share a byte, that offsets are aligned, and
/// that the counters agree with the live allocations.
fn check_layout<B: Backend>(ctx: &Context<B>) {
    let all = ctx.observe().allocations();
    let align = ctx.backend().limits().offset_alignment;
    let mut by_block: HashMap<(MemoryKind, u64), Vec<(u64, u64)>> = HashMap::new();
    for a in &all {
        assert_eq!(
            a.offset % align,
            0,
            "offset {} of `{}` is unaligned",
            a.offset,
            a.label
        );
        assert!(a.reserved >= a.size);
        by_block
            .entry((a.kind, a.block))
            .or_default()
            .push((a.offset, a.offset + a.reserved));
    }
    for ranges in by_block.values_mut() {
        ranges.sort();
        for w in ranges.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "allocations {:?} and {:?} overlap",
                w[0],
                w[1]
            );
        }
    }
    let s = ctx.stats();
    assert_eq!(s.live, all.len());
    assert_eq!(s.in_use, all.iter().map(|a| a.reserved).sum::<u64>());
    assert_eq!(s.requested, all.iter().map(|a| a.size).sum::<u64>());
    let kinds_reserved: u64 = s.kinds.iter().map(|k| k.reserved).sum();
    assert_eq!(s.reserved, kinds_reserved);
    assert!(s.in_use <= s.reserved);
}

fn live_allocations_never_overlap<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        block_size: Some(8 * MIB),
        ..Default::default()
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut live = Vec::new();
    for round in 0..4 {
        for _ in 0..150 {
            let size = rng.random_range(1..3 * MIB as u32) as u64 >> rng.random_range(0..12);
            live.push(
                ctx.alloc(AllocDesc::new("layout", size.max(1)).uninit())
                    .expect("alloc"),
            );
        }
        check_layout(&ctx);
        // Release a random half.
        for _ in 0..live.len() / 2 {
            let i = rng.random_range(0..live.len());
            ctx.release(live.swap_remove(i)).expect("release");
        }
        check_layout(&ctx);
        assert!(ctx.stats().fragmentation() >= 0.0, "round {round}");
    }
    for h in live {
        ctx.release(h).expect("release");
    }
    ctx.wait().expect("wait");
    check_layout(&ctx);
}

fn reused_memory_arrives_zeroed<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let size = MIB + 100;
    let a = ctx.alloc(AllocDesc::new("dirty", size)).expect("alloc");
    ctx.upload(a, &vec![0xAB; size as usize]).expect("upload");
    let where_a = ctx.observe().allocation_info(a).expect("info");
    ctx.release(a).expect("release");
    ctx.wait().expect("wait");
    let b = ctx.alloc(AllocDesc::new("reuse", size)).expect("alloc");
    let where_b = ctx.observe().allocation_info(b).expect("info");
    assert_eq!(
        (where_a.block, where_a.offset),
        (where_b.block, where_b.offset),
        "released memory was not reused"
    );
    assert!(
        ctx.download(b).expect("download").iter().all(|&x| x == 0),
        "reused memory is not zeroed"
    );
    // The padding past the requested size was cleared too.
    ctx.release(b).expect("release");
    ctx.wait().expect("wait");
    let c = ctx
        .alloc(AllocDesc::new("reuse 2", where_a.reserved))
        .expect("alloc");
    assert!(ctx.download(c).expect("download").iter().all(|&x| x == 0));
    ctx.release(c).expect("release");
}

fn stale_double_and_foreign_handles<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let other = mk(ContextDesc::default());
    let h = ctx.alloc(AllocDesc::new("h", 64)).expect("alloc");
    let foreign = other.alloc(AllocDesc::new("foreign", 64)).expect("alloc");
    let stale = |r: vramkit::Result<_>, why: StaleReason| match r {
        Err(Error::StaleHandle { reason }) => assert_eq!(reason, why),
        Err(e) => panic!("expected StaleHandle({why:?}), got {e}"),
        Ok(_) => panic!("expected StaleHandle({why:?}), got Ok"),
    };
    stale(
        ctx.upload(foreign, &[1]).map(|_| ()),
        StaleReason::ForeignContext,
    );
    stale(ctx.release(foreign), StaleReason::ForeignContext);
    ctx.release(h).expect("first release");
    stale(ctx.release(h), StaleReason::Released);
    stale(ctx.upload(h, &[1, 2, 3]), StaleReason::Released);
    stale(ctx.download(h).map(|_| ()), StaleReason::Released);
    stale(ctx.observe().size_of(h).map(|_| ()), StaleReason::Released);
    // A new allocation in the same slot does not revive the old handle.
    let again = ctx.alloc(AllocDesc::new("again", 64)).expect("alloc");
    stale(ctx.download(h).map(|_| ()), StaleReason::Released);
    assert_eq!(ctx.download(again).expect("download"), vec![0; 64]);
    // The foreign context still owns its allocation.
    other.release(foreign).expect("owner releases");
    let msg = Error::StaleHandle {
        reason: StaleReason::Released,
    }
    .to_string();
    assert!(msg.contains("released"), "{msg}");
}

fn over_budget_reports_figures_and_recovers<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(16 * MIB),
        staging_chunk: MIB,
        ..Default::default()
    });
    // 12 MiB: more than half the 16 MiB room, so it takes a dedicated block.
    let big = ctx.alloc(AllocDesc::new("big", 12 * MIB)).expect("alloc");
    match ctx.alloc(AllocDesc::new("too much", 5 * MIB)) {
        Err(Error::OverBudget {
            requested,
            limit,
            in_use,
            reserved,
            largest_free,
            fits_now,
        }) => {
            assert_eq!(requested, 5 * MIB);
            assert_eq!(limit, 16 * MIB);
            assert_eq!(in_use, 12 * MIB);
            assert_eq!(reserved, 12 * MIB);
            assert_eq!(largest_free, 0);
            assert_eq!(fits_now, 4 * MIB);
        }
        other => panic!("expected OverBudget, got {other:?}"),
    }
    let e = ctx
        .alloc(AllocDesc::new("too much", 5 * MIB))
        .expect_err("still over");
    assert!(e.to_string().contains("raise the budget"), "{e}");
    assert_eq!(ctx.stats().over_budget_errors, 2);
    // What the error said fits, fits; and the context works (its two 1 MiB staging buffers
    // count in the budget too).
    let fits = ctx
        .alloc(AllocDesc::new("fits", 4 * MIB))
        .expect("alloc what fits");
    ctx.release(fits).expect("release");
    let small = ctx.alloc(AllocDesc::new("small", 2 * MIB)).expect("alloc");
    let data = random_bytes(2 * MIB as usize, 3);
    ctx.upload(small, &data).expect("upload");
    assert!(ctx.download(small).expect("download") == data);
    ctx.release(big).expect("release");
    let after = ctx
        .alloc(AllocDesc::new("after", 5 * MIB))
        .expect("fits after release");
    for h in [small, after] {
        ctx.release(h).expect("release");
    }
    let s = ctx.stats();
    assert!(
        s.peak_reserved <= 16 * MIB,
        "peak {} passed the budget",
        s.peak_reserved
    );
}

fn zero_and_oversized_requests<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    assert!(matches!(
        ctx.alloc(AllocDesc::new("zero", 0)),
        Err(Error::ZeroSize { .. })
    ));
    let max = ctx.backend().limits().max_block_size;
    match ctx.alloc(AllocDesc::new("huge", max + 1)) {
        Err(Error::TooLarge {
            requested, max: m, ..
        }) => {
            assert_eq!((requested, m), (max + 1, max));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(matches!(
        ctx.alloc(AllocDesc::new("staging", 64).kind(MemoryKind::Upload)),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        ctx.memory().max_batch(0),
        Err(Error::ZeroSize { .. })
    ));
    let h = ctx.alloc(AllocDesc::new("small", 10)).expect("alloc");
    assert!(matches!(
        ctx.upload(h, &[0; 11]),
        Err(Error::InvalidRange { .. })
    ));
    assert!(matches!(
        ctx.transfers().upload_at(h, u64::MAX, &[0; 2]),
        Err(Error::InvalidRange { .. })
    ));
    let mut out = [0u8; 4];
    assert!(matches!(
        ctx.transfers().download_into(h, 7, &mut out),
        Err(Error::InvalidRange { .. })
    ));
    // Nothing was written by the refused calls.
    assert_eq!(ctx.download(h).expect("download"), vec![0; 10]);
    ctx.release(h).expect("release");
    assert_eq!(ctx.stats().live, 0);
}

fn partial_transfers_keep_neighbours<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        staging_chunk: 4096,
        ..Default::default()
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for size in [1u64, 5, 13, 1000, 10_003] {
        let h = ctx.alloc(AllocDesc::new("partial", size)).expect("alloc");
        let mut model = vec![0u8; size as usize];
        for step in 0..40 {
            let offset = rng.random_range(0..size);
            let len = rng.random_range(0..=(size - offset).min(9000));
            let range = offset as usize..(offset + len) as usize;
            if step % 3 == 2 {
                let mut out = vec![0u8; len as usize];
                ctx.transfers()
                    .download_into(h, offset, &mut out)
                    .expect("download");
                assert_eq!(out, model[range], "size {size}: read {offset}+{len}");
            } else {
                let data = random_bytes(len as usize, step);
                ctx.transfers().upload_at(h, offset, &data).expect("upload");
                model[range].copy_from_slice(&data);
            }
        }
        assert_eq!(ctx.download(h).expect("download"), model, "size {size}");
        ctx.release(h).expect("release");
    }
}

fn streams_from_a_reader<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        staging_chunk: MIB,
        ..Default::default()
    });
    let size = 10 * MIB + 7;
    let data = random_bytes(size as usize, 5);
    let h = ctx.alloc(AllocDesc::new("stream", size)).expect("alloc");
    let written = ctx
        .transfers()
        .upload_from_reader(h, std::io::Cursor::new(&data))
        .expect("stream");
    assert_eq!(written, size);
    assert!(ctx.download(h).expect("download") == data);
    // A shorter input leaves the rest as it was.
    let short = random_bytes(3 * MIB as usize + 1, 6);
    ctx.transfers()
        .upload_from_reader(h, std::io::Cursor::new(&short))
        .expect("stream");
    let back = ctx.download(h).expect("download");
    assert!(back[..short.len()] == short[..] && back[short.len()..] == data[short.len()..]);
    // A longer input is refused.
    let long = vec![1u8; size as usize + 1];
    assert!(matches!(
        ctx.transfers()
            .upload_from_reader(h, std::io::Cursor::new(&long)),
        Err(Error::InvalidRange { .. })
    ));
    // A failing reader is an Io error.
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    assert!(matches!(
        ctx.transfers().upload_from_reader(h, Broken),
        Err(Error::Io { .. })
    ));
    ctx.release(h).expect("release");
}

fn threads_allocate_and_release_under_load<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(256 * MIB),
        staging_chunk: 256 << 10,
        ..Default::default()
    });
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let ctx = &ctx;
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(100 + t);
                let mut mine = Vec::new();
                for i in 0..150u64 {
                    let size = rng.random_range(1..600_000u64);
                    let h = ctx.alloc(AllocDesc::new("thread", size)).expect("alloc");
                    let data = random_bytes(size as usize, t * 1000 + i);
                    ctx.upload(h, &data).expect("upload");
                    mine.push((h, data));
                    if mine.len() > 6 || rng.random_bool(0.3) {
                        let (h, data) = mine.swap_remove(rng.random_range(0..mine.len()));
                        assert!(
                            ctx.download(h).expect("download") == data,
                            "thread {t} lost data"
                        );
                        ctx.release(h).expect("release");
                    }
                }
                for (h, data) in mine {
                    assert!(ctx.download(h).expect("download") == data);
                    ctx.release(h).expect("release");
                }
            });
        }
    });
    ctx.wait().expect("wait");
    let s = ctx.stats();
    assert_eq!((s.live, s.in_use), (0, 0));
    assert_eq!(s.allocations, 600);
    assert!(s.peak_reserved <= 256 * MIB);
}

fn trim_returns_everything<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let hs: Vec<_> = (0..5)
        .map(|i| {
            ctx.alloc(AllocDesc::new("t", (i + 1) * MIB))
                .expect("alloc")
        })
        .collect();
    ctx.upload(hs[0], &[1; 100]).expect("upload");
    assert_eq!(ctx.download(hs[0]).expect("download")[..100], [1; 100]);
    for h in hs {
        ctx.release(h).expect("release");
    }
    let before = ctx.stats().reserved;
    assert!(before > 0);
    assert_eq!(ctx.memory().trim().expect("trim"), before);
    let s = ctx.stats();
    assert_eq!((s.reserved, s.staging), (0, 0));
    assert!(s.kinds.iter().all(|k| k.blocks == 0));
}
