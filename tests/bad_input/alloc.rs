//! Allocation sizes, kinds, budgets and device limits; `max_batch`.

use vramkit::backend::host::HostConfig;
use vramkit::backend::BackendLimits;
use vramkit::{AllocDesc, Error, MemoryKind};

use crate::check::{alloc, gpu, host, host_budget, host_config, MIB};
use crate::harness::{skip, Case};

pub const CASES: &[Case] = &[
    Case::new("alloc: 0 bytes", zero),
    Case::isolated("alloc: u64::MAX bytes", u64_max),
    Case::isolated("alloc: i64::MAX bytes", i64_max),
    Case::isolated("alloc: largest block + 1 byte", past_max_block),
    Case::isolated(
        "alloc: u64::MAX - 255 (aligned, past the largest block)",
        aligned_near_max,
    ),
    Case::isolated(
        "alloc: 999 bytes where blocks hold 1000 (rounding passes it)",
        rounding_past_max,
    ),
    Case::isolated("alloc (gpu): u64::MAX bytes", gpu_u64_max),
    Case::isolated(
        "alloc (gpu): largest buffer - 10 bytes (rounding passes it)",
        gpu_rounding_past_max,
    ),
    Case::new("alloc: MemoryKind::Upload", kind_upload),
    Case::new("alloc: MemoryKind::Readback", kind_readback),
    Case::isolated(
        "alloc (gpu): MemoryKind::Unified where unsupported",
        gpu_unified,
    ),
    Case::new("alloc: budget of 0 bytes", budget_zero),
    Case::new("alloc: budget of 1 byte", budget_one),
    Case::new("alloc: 2 MiB past a 1 MiB budget", past_budget),
    Case::new(
        "alloc: past a filled budget; `fits_now` must fit",
        fits_now_fits,
    ),
    Case::new("alloc: emulated device of 0 bytes", capacity_zero),
    Case::new("alloc: 2 MiB on an emulated 1 MiB device", capacity_small),
    Case::new("max_batch: 0 bytes", max_batch_zero),
    Case::isolated("max_batch: u64::MAX bytes is 0", max_batch_u64_max),
    Case::isolated(
        "max_batch: 1<<62 bytes is 0 when alloc says TooLarge",
        max_batch_1_62,
    ),
    Case::isolated(
        "max_batch: largest block + 1 is 0",
        max_batch_past_max_block,
    ),
    Case::new("max_batch: budget of 0 is 0", max_batch_budget_zero),
    Case::new(
        "max_batch: the count it promises can be allocated",
        max_batch_promise,
    ),
];

fn zero() {
    expect_err!(
        host().alloc(AllocDesc::new("zero-bytes", 0)),
        Error::ZeroSize { .. },
        ["`zero-bytes`", "0 bytes"],
        ["at least 1 byte"]
    );
}

fn too_large(size: u64, shown: &str) {
    expect_err!(
        host().alloc(AllocDesc::new("huge", size)),
        Error::TooLarge { .. },
        ["`huge`", shown],
        ["split"]
    );
}

fn u64_max() {
    too_large(u64::MAX, "18446744073709551615");
}

fn i64_max() {
    too_large(i64::MAX as u64, "9223372036854775807");
}

fn past_max_block() {
    too_large((1 << 40) + 1, "1099511627777");
}

fn aligned_near_max() {
    too_large(u64::MAX - 255, "18446744073709551360");
}

/// 999 ≤ 1000, but allocations are whole 256-byte units: the message must say why 999 can
/// never fit (the rounded size or the alignment), not "999 bytes can never fit: the limit is
/// 1000 bytes".
fn rounding_past_max() {
    let ctx = host_config(HostConfig {
        limits: BackendLimits {
            max_block_size: 1000,
            ..HostConfig::default().limits
        },
        ..Default::default()
    });
    expect_err!(
        ctx.alloc(AllocDesc::new("odd-limit", 999)),
        Error::TooLarge { .. },
        ["`odd-limit`", "999", "1024|round|align"],
        ["split|smaller|at most"]
    );
}

fn gpu_u64_max() {
    let Some(ctx) = gpu("alloc (gpu): u64::MAX") else {
        return;
    };
    expect_err!(
        ctx.alloc(AllocDesc::new("huge", u64::MAX)),
        Error::TooLarge { .. },
        ["`huge`", "18446744073709551615"],
        ["split"]
    );
}

fn gpu_rounding_past_max() {
    let Some(ctx) = gpu("alloc (gpu): rounding past max") else {
        return;
    };
    use vramkit::backend::Storage;
    let limits = ctx.backend().limits().clone();
    let size = limits.max_block_size - 10;
    let unit = limits.offset_alignment.max(limits.copy_alignment).max(4);
    if size.next_multiple_of(unit) <= limits.max_block_size {
        return skip("the adapter's largest buffer is a multiple of its alignment");
    }
    expect_err!(
        ctx.alloc(AllocDesc::new("nearly-max", size)),
        Error::TooLarge { .. },
        ["`nearly-max`", &size.to_string(), "round|align"],
        ["split|smaller|at most"]
    );
}

fn kind_upload() {
    expect_err!(
        host().alloc(AllocDesc::new("staging?", 64).kind(MemoryKind::Upload)),
        Error::Unsupported { .. },
        ["`staging?`", "Upload"],
        ["allocate Device"]
    );
}

fn kind_readback() {
    expect_err!(
        host().alloc(AllocDesc::new("readback?", 64).kind(MemoryKind::Readback)),
        Error::Unsupported { .. },
        ["`readback?`", "Readback"],
        ["allocate Device"]
    );
}

fn gpu_unified() {
    let Some(ctx) = gpu("alloc (gpu): Unified") else {
        return;
    };
    let features = ctx.backend().device().features();
    if features.contains(vramkit::wgpu::Features::MAPPABLE_PRIMARY_BUFFERS) {
        return skip("the adapter offers unified memory (MAPPABLE_PRIMARY_BUFFERS)");
    }
    expect_err!(
        ctx.alloc(AllocDesc::new("shared", 64).kind(MemoryKind::Unified)),
        Error::Unsupported { .. },
        ["Unified"],
        ["use MemoryKind::Device"]
    );
}

fn budget_zero() {
    expect_err!(
        host_budget(0).alloc(AllocDesc::new("one", 1)),
        Error::OverBudget { .. },
        ["budget of 0 bytes"],
        ["raise the budget"]
    );
}

/// One byte under a budget of one byte: what passes the budget is the 256-byte unit it is
/// rounded to, which the message must say ("1 bytes would pass the budget of 1 bytes" is false).
fn budget_one() {
    expect_err!(
        host_budget(1).alloc(AllocDesc::new("one", 1)),
        Error::OverBudget { .. },
        ["budget of 1 byte", "256|round|align"],
        ["raise the budget"]
    );
}

fn past_budget() {
    expect_err!(
        host_budget(MIB).alloc(AllocDesc::new("two-mib", 2 * MIB)),
        Error::OverBudget { .. },
        ["2097152", "1048576"],
        ["raise the budget"]
    );
}

/// The refusal says "at most N bytes fit now": N bytes must then fit.
fn fits_now_fits() {
    let ctx = host_budget(8 * MIB);
    let _keep = alloc(&ctx, "resident", 5 * MIB);
    let e = expect_err!(
        ctx.alloc(AllocDesc::new("second", 5 * MIB)),
        Error::OverBudget { .. },
        ["5242880", "8388608"],
        ["raise the budget"]
    );
    let Error::OverBudget { fits_now, .. } = e else {
        unreachable!()
    };
    if fits_now > 0 {
        if let Err(e) = ctx.alloc(AllocDesc::new("fits-now", fits_now)) {
            panic!("WRONG ANSWER: the refusal said {fits_now} bytes fit now, but they do not: {e}");
        }
    }
}

fn capacity_zero() {
    let ctx = host_config(HostConfig {
        capacity: Some(0),
        ..Default::default()
    });
    expect_err!(
        ctx.alloc(AllocDesc::new("tiny", 16)),
        Error::OutOfMemory { .. },
        ["Device", "`tiny`|16 bytes"],
        ["release"]
    );
}

fn capacity_small() {
    let ctx = host_config(HostConfig {
        capacity: Some(MIB),
        ..Default::default()
    });
    expect_err!(
        ctx.alloc(AllocDesc::new("big", 2 * MIB)),
        Error::OutOfMemory { .. },
        ["Device", "`big`|2097152 bytes"],
        ["release"]
    );
}

fn max_batch_zero() {
    expect_err!(
        host().memory().max_batch(0),
        Error::ZeroSize { .. },
        ["max_batch", "0 bytes"],
        ["at least 1 byte"]
    );
}

/// `max_batch(size)` must be 0 when `alloc(size)` can never succeed.
fn max_batch_never_fits(size: u64) {
    let ctx = host();
    let never = matches!(
        ctx.alloc(AllocDesc::new("probe", size)),
        Err(Error::TooLarge { .. })
    );
    assert!(never, "SETUP: alloc({size}) was expected to be TooLarge");
    match ctx.memory().max_batch(size) {
        Ok(0) => {}
        Ok(n) => panic!(
            "WRONG ANSWER: max_batch({size}) = {n}, but alloc({size}) is TooLarge (never fits)"
        ),
        Err(e) => panic!("max_batch({size}) failed instead of answering 0: {e}"),
    }
}

fn max_batch_u64_max() {
    max_batch_never_fits(u64::MAX);
}

fn max_batch_1_62() {
    max_batch_never_fits(1 << 62);
}

fn max_batch_past_max_block() {
    max_batch_never_fits((1 << 40) + 1);
}

fn max_batch_budget_zero() {
    match host_budget(0).memory().max_batch(1) {
        Ok(0) => {}
        other => panic!("WRONG ANSWER: max_batch(1) under a budget of 0 is {other:?}, not 0"),
    }
}

fn max_batch_promise() {
    let ctx = host_budget(16 * MIB);
    let _a = alloc(&ctx, "resident", 3 * MIB + 5);
    let n = ctx.memory().max_batch(MIB).expect("max_batch");
    for i in 0..n {
        if let Err(e) = ctx.alloc(AllocDesc::new("batch item", MIB)) {
            panic!("WRONG ANSWER: max_batch(1 MiB) promised {n}, allocation {i} failed: {e}");
        }
    }
}
