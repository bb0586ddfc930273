//! Hostile `ContextDesc` and emulated-device settings: each is accepted or refused with a typed
//! error, and once accepted, allocations and transfers still work.

use vramkit::backend::host::HostConfig;
use vramkit::backend::BackendLimits;
use vramkit::memory::CompactionDesc;
use vramkit::{AllocDesc, ContextDesc, Error, MemoryKind};

use crate::check::{alloc, gpu_with, host_config, host_with, KIB, MIB};
use crate::harness::Case;

pub const CASES: &[Case] = &[
    Case::new(
        "ContextDesc: staging_chunk 0 still uploads",
        staging_chunk_zero,
    ),
    Case::new(
        "ContextDesc: staging_chunk 3 still uploads",
        staging_chunk_three,
    ),
    Case::isolated(
        "ContextDesc: staging_chunk u64::MAX still uploads",
        staging_chunk_huge,
    ),
    Case::isolated(
        "ContextDesc (gpu): staging_chunk u64::MAX still uploads",
        gpu_staging_chunk_huge,
    ),
    Case::new(
        "ContextDesc: staging_slots 0 still uploads",
        staging_slots_zero,
    ),
    Case::isolated("ContextDesc: staging_slots usize::MAX", staging_slots_max),
    Case::isolated("ContextDesc: staging_slots 1<<62", staging_slots_huge),
    Case::new("ContextDesc: block_size 0 still allocates", block_size_zero),
    Case::isolated(
        "ContextDesc: block_size u64::MAX still allocates",
        block_size_huge,
    ),
    Case::new(
        "ContextDesc: hostile compaction settings",
        hostile_compaction,
    ),
    Case::new(
        "ContextDesc: release_threshold 0 gives memory back",
        release_threshold_zero,
    ),
    Case::isolated(
        "ContextDesc (gpu): release_threshold 0 reuses zeroed",
        gpu_release_threshold_zero,
    ),
    Case::isolated("HostConfig: largest block of 2 bytes", max_block_two),
    Case::isolated("HostConfig: alignments of 0", alignments_zero),
];

/// Uploads and reads back 3000 bytes at odd offsets through the staging ring.
#[track_caller]
fn round_trip<B: vramkit::backend::Backend>(ctx: &vramkit::Context<B>, what: &str) {
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let h = alloc(ctx, "round trip", 3003);
    if let Err(e) = ctx.transfers().upload_at(h, 3, &data) {
        panic!("{what} was accepted, but uploading 3000 bytes fails: {e}");
    }
    let mut back = vec![0u8; 3000];
    if let Err(e) = ctx.transfers().download_into(h, 3, &mut back) {
        panic!("{what} was accepted, but downloading 3000 bytes fails: {e}");
    }
    assert!(
        back == data,
        "WRONG ANSWER: {what}: the bytes read back differ"
    );
    ctx.release(h).expect("release");
}

fn staging(chunk: u64, slots: usize) -> ContextDesc {
    ContextDesc {
        staging_chunk: chunk,
        staging_slots: slots,
        ..Default::default()
    }
}

fn staging_chunk_zero() {
    round_trip(&host_with(staging(0, 4)), "staging_chunk 0");
}

fn staging_chunk_three() {
    round_trip(&host_with(staging(3, 4)), "staging_chunk 3");
}

fn staging_chunk_huge() {
    round_trip(&host_with(staging(u64::MAX, 4)), "staging_chunk u64::MAX");
}

fn gpu_staging_chunk_huge() {
    if let Some(ctx) = gpu_with("gpu staging_chunk u64::MAX", staging(u64::MAX, 4)) {
        round_trip(&ctx, "staging_chunk u64::MAX");
    }
}

fn staging_slots_zero() {
    round_trip(&host_with(staging(256, 0)), "staging_slots 0");
}

fn staging_slots_max() {
    let ctx = host_with(staging(4 * MIB, usize::MAX));
    let cap = ctx.transfers().staging_capacity();
    assert!(
        cap >= 8 * MIB,
        "WRONG ANSWER: staging_capacity() = {cap} with 4 MiB slots, usize::MAX of them"
    );
    round_trip(&ctx, "staging_slots usize::MAX");
}

/// 2⁶² slots of 4 MiB: their bytes pass 2⁶⁴ (a product that wraps to 0).
fn staging_slots_huge() {
    let ctx = host_with(staging(4 * MIB, 1 << 62));
    let cap = ctx.transfers().staging_capacity();
    assert!(
        cap >= 8 * MIB,
        "WRONG ANSWER: staging_capacity() = {cap} with 4 MiB slots, 2^62 of them"
    );
    round_trip(&ctx, "staging_slots 1<<62");
}

fn many_sizes<B: vramkit::backend::Backend>(ctx: &vramkit::Context<B>, what: &str) {
    for size in [1, 255, 4 * KIB + 1, MIB, 3 * MIB + 7, 24 * MIB] {
        if let Err(e) = ctx.alloc(AllocDesc::new("sized", size)) {
            panic!("{what} was accepted, but allocating {size} bytes fails: {e}");
        }
    }
    round_trip(ctx, what);
    ctx.observe().audit().check().expect("audit");
}

fn block_size_zero() {
    many_sizes(
        &host_with(ContextDesc {
            block_size: Some(0),
            ..Default::default()
        }),
        "block_size 0",
    );
}

fn block_size_huge() {
    many_sizes(
        &host_with(ContextDesc {
            block_size: Some(u64::MAX),
            ..Default::default()
        }),
        "block_size u64::MAX",
    );
}

fn hostile_compaction() {
    let ctx = host_with(ContextDesc {
        budget: Some(64 * MIB),
        compaction: CompactionDesc {
            before_growth: true,
            max_pass_bytes: 0,
            slack_permille: u32::MAX,
        },
        ..Default::default()
    });
    let hs: Vec<_> = (0..8).map(|_| alloc(&ctx, "frag", 3 * MIB)).collect();
    for h in hs.iter().step_by(2) {
        ctx.release(*h).expect("release");
    }
    many_sizes(&ctx, "max_pass_bytes 0 and slack_permille u32::MAX");
}

fn release_threshold_zero() {
    let ctx = host_with(ContextDesc {
        release_threshold: 0,
        ..Default::default()
    });
    let h = alloc(&ctx, "dirty", 3 * MIB);
    ctx.upload(h, &[0xAB; 4096]).expect("upload");
    ctx.release(h).expect("release");
    let left = ctx.stats().kind(MemoryKind::Device).reserved;
    assert!(
        left == 0,
        "WRONG ANSWER: release_threshold 0 keeps {left} device bytes after the only release"
    );
    let h = alloc(&ctx, "again", 3 * MIB);
    let back = ctx.download(h).expect("download");
    assert!(
        back.iter().all(|&b| b == 0),
        "WRONG ANSWER: reused memory is not zeroed"
    );
}

fn gpu_release_threshold_zero() {
    let desc = ContextDesc {
        release_threshold: 0,
        ..Default::default()
    };
    let Some(ctx) = gpu_with("gpu release_threshold 0", desc) else {
        return;
    };
    for round in 0..3 {
        let h = alloc(&ctx, "dirty", 3 * MIB);
        let back = ctx.download(h).expect("download");
        assert!(
            back.iter().all(|&b| b == 0),
            "WRONG ANSWER: round {round}: new memory is not zeroed"
        );
        ctx.upload(h, &[0xCD; 8192]).expect("upload");
        ctx.release(h).expect("release");
    }
    ctx.wait().expect("wait");
}

fn max_block_two() {
    let ctx = host_config(HostConfig {
        limits: BackendLimits {
            max_block_size: 2,
            ..HostConfig::default().limits
        },
        ..Default::default()
    });
    expect_err!(
        ctx.alloc(AllocDesc::new("tiny", 1)),
        Error::TooLarge { .. },
        ["`tiny`"],
        ["split|smaller|at most"]
    );
}

fn alignments_zero() {
    let ctx = host_config(HostConfig {
        limits: BackendLimits {
            offset_alignment: 0,
            copy_alignment: 0,
            ..HostConfig::default().limits
        },
        ..Default::default()
    });
    round_trip(&ctx, "offset and copy alignments of 0");
}
