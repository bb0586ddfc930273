//! A model-based property test of the memory manager on host memory: random operation sequences
//! against a plain map of what each live allocation should hold, with the layout and counters
//! re-derived from scratch after every step.

use std::collections::HashMap;

use proptest::prelude::*;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error};

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        size: u64,
        zeroed: bool,
    },
    Release(usize),
    ReleaseAgain(usize),
    Write {
        which: usize,
        offset: u64,
        len: u64,
        byte: u8,
    },
    Read(usize),
    Trim,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..300_000, any::<bool>()).prop_map(|(size, zeroed)| Op::Alloc { size, zeroed }),
        3 => any::<usize>().prop_map(Op::Release),
        1 => any::<usize>().prop_map(Op::ReleaseAgain),
        3 => (any::<usize>(), any::<u64>(), 0u64..70_000, any::<u8>())
            .prop_map(|(which, offset, len, byte)| Op::Write { which, offset, len, byte }),
        2 => any::<usize>().prop_map(Op::Read),
        1 => Just(Op::Trim),
    ]
}

fn check_invariants(
    ctx: &Context<vramkit::backend::host::HostBackend>,
    model: &HashMap<BufferHandle, Vec<u8>>,
    budget: u64,
) {
    let all = ctx.observe().allocations();
    let mut ranges: HashMap<(vramkit::MemoryKind, u64), Vec<(u64, u64)>> = HashMap::new();
    for a in &all {
        ranges
            .entry((a.kind, a.block))
            .or_default()
            .push((a.offset, a.offset + a.reserved));
    }
    for r in ranges.values_mut() {
        r.sort();
        for w in r.windows(2) {
            prop_assert_no_overlap(w[0], w[1]);
        }
    }
    let s = ctx.stats();
    assert_eq!(s.live, model.len());
    assert_eq!(
        s.requested,
        model.values().map(|v| v.len() as u64).sum::<u64>()
    );
    assert_eq!(s.in_use, all.iter().map(|a| a.reserved).sum::<u64>());
    assert!(s.reserved <= budget && s.peak_reserved <= budget);
    assert_eq!(s.allocations - s.releases, s.live as u64);
}

fn prop_assert_no_overlap(a: (u64, u64), b: (u64, u64)) {
    assert!(a.1 <= b.0, "{a:?} overlaps {b:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn memory_manager_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        let budget = 4 << 20;
        let ctx = Context::host(ContextDesc {
            budget: Some(budget),
            block_size: Some(1 << 20),
            staging_chunk: 64 << 10,
            staging_slots: 2,
            ..Default::default()
        });
        let mut model: HashMap<BufferHandle, Vec<u8>> = HashMap::new();
        let mut order: Vec<BufferHandle> = Vec::new();
        let mut released: Vec<BufferHandle> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc { size, zeroed } => {
                    let desc = AllocDesc::new("p", size);
                    let desc = if zeroed { desc } else { desc.uninit() };
                    match ctx.alloc(desc) {
                        Ok(h) => {
                            // Uninitialised memory holds unknown bytes: define them by writing.
                            // Zeroed memory must read as zeros, reused or not (checked by Read).
                            if !zeroed {
                                match ctx.upload(h, &vec![0; size as usize]) {
                                    Ok(()) => {}
                                    Err(Error::OverBudget { .. }) => {
                                        ctx.release(h).expect("release");
                                        released.push(h);
                                        continue;
                                    }
                                    Err(e) => panic!("{e}"),
                                }
                            }
                            model.insert(h, vec![0; size as usize]);
                            order.push(h);
                        }
                        Err(Error::OverBudget { limit, reserved, .. }) => {
                            prop_assert_eq!(limit, budget);
                            prop_assert!(reserved <= limit);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                Op::Release(i) if !order.is_empty() => {
                    let h = order.swap_remove(i % order.len());
                    model.remove(&h);
                    ctx.release(h).expect("release");
                    released.push(h);
                }
                Op::ReleaseAgain(i) if !released.is_empty() => {
                    let h = released[i % released.len()];
                    let stale = matches!(ctx.release(h), Err(Error::StaleHandle { .. }));
                    prop_assert!(stale);
                }
                Op::Write { which, offset, len, byte } if !order.is_empty() => {
                    let h = order[which % order.len()];
                    let data = model.get_mut(&h).expect("live");
                    let offset = offset % data.len() as u64;
                    let len = len.min(data.len() as u64 - offset);
                    match ctx.transfers().upload_at(h, offset, &vec![byte; len as usize]) {
                        Ok(()) => data[offset as usize..(offset + len) as usize].fill(byte),
                        // Staging needs budget too; a refused write changes nothing.
                        Err(Error::OverBudget { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                Op::Read(which) if !order.is_empty() => {
                    let h = order[which % order.len()];
                    match ctx.download(h) {
                        Ok(back) => prop_assert!(&back == model.get(&h).expect("live")),
                        Err(Error::OverBudget { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                Op::Trim => {
                    ctx.memory().trim().expect("trim");
                }
                _ => {}
            }
            check_invariants(&ctx, &model, budget);
        }
    }
}

/// A seeded random driver, a million operations per run: allocations of trace-like sizes (a
/// byte to 96 MiB, log-uniform), releases, stale releases, compaction and trimming under a
/// budget, on the null host device with growing segments and with fixed blocks. Checked
/// against a model of the live set: every allocation aligned and inside the budget, no two
/// overlapping (an interval map per block, rebuilt from the context when compaction moved
/// something), immovable ones never moving, counters equal to the model's sums, a full audit
/// (recount and layout: chunks tile blocks, free ranges coalesced and indexed) every 20,000
/// operations, and after releasing everything, every block one free range.
#[test]
fn a_million_operations_against_a_model() {
    // A million in release (CI's `make test`); debug builds (CI's `make test-debug`, and
    // users' `cargo test`) check the same paths with fewer, for time.
    let ops = if cfg!(debug_assertions) {
        50_000
    } else {
        500_000
    };
    for resizable in [true, false] {
        million_operations(resizable, ops);
    }
}

fn million_operations(resizable: bool, ops: usize) {
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    use vramkit::backend::host::{HostBackend, HostConfig};
    use vramkit::MemoryKind;

    const ALIGN: u64 = 256;
    let budget = 3u64 << 30;
    let ctx = Context::with_backend(
        HostBackend::new(HostConfig {
            resizable,
            keep_bytes: false,
            ..Default::default()
        }),
        ContextDesc {
            budget: Some(budget),
            ..Default::default()
        },
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed + resizable as u64);
    /// Requested and reserved bytes, and where it must stay if immovable.
    type Entry = (u64, u64, Option<(u64, u64)>);
    let mut model: HashMap<BufferHandle, Entry> = HashMap::new();
    let mut order: Vec<BufferHandle> = Vec::new();
    let mut released: Vec<BufferHandle> = Vec::new();
    // (kind, block, offset) -> end, of every live allocation.
    let mut spans: BTreeMap<(MemoryKind, u64, u64), u64> = BTreeMap::new();
    let rebuild = |spans: &mut BTreeMap<(MemoryKind, u64, u64), u64>| {
        spans.clear();
        for a in ctx.observe().allocations() {
            spans.insert((a.kind, a.block, a.offset), a.offset + a.reserved);
        }
        let mut prev: Option<(&(MemoryKind, u64, u64), &u64)> = None;
        for (k, end) in spans.iter() {
            if let Some((pk, pend)) = prev {
                assert!(
                    pk.0 != k.0 || pk.1 != k.1 || *pend <= k.2,
                    "{pk:?}..{pend} overlaps {k:?}"
                );
            }
            prev = Some((k, end));
        }
    };
    let (mut refused, mut stale) = (0u64, 0u64);
    let mut moved = 0;
    for step in 0..ops {
        let roll = rng.random_range(0..1000);
        if (roll < 540 && order.len() < 2000) || order.is_empty() {
            let size = (2f64.powf(rng.random_range(0.0..26.5f64)) as u64).max(1);
            let immovable = rng.random_bool(0.02);
            let desc = AllocDesc::new("m", size);
            let desc = if immovable { desc.immovable() } else { desc };
            match ctx.alloc(desc) {
                Ok(h) => {
                    let a = ctx.observe().allocation_info(h).expect("info");
                    assert_eq!(a.size, size);
                    assert!(
                        a.reserved >= size && a.offset.is_multiple_of(ALIGN),
                        "{a:?}"
                    );
                    let key = (a.kind, a.block, a.offset);
                    let end = a.offset + a.reserved;
                    if ctx.stats().compaction.allocations_moved != moved {
                        // The request compacted: the model's map is stale.
                        rebuild(&mut spans);
                        spans.remove(&key);
                    }
                    if let Some((k, e)) = spans.range(..key).next_back() {
                        assert!(
                            k.0 != a.kind || k.1 != a.block || *e <= a.offset,
                            "{a:?} overlaps {k:?}"
                        );
                    }
                    if let Some((k, _)) = spans.range(key..).next() {
                        assert!(
                            k.0 != a.kind || k.1 != a.block || end <= k.2,
                            "{a:?} overlaps {k:?}"
                        );
                    }
                    spans.insert(key, end);
                    let at = immovable.then_some((a.block, a.offset));
                    model.insert(h, (size, a.reserved, at));
                    order.push(h);
                }
                Err(Error::OverBudget {
                    limit, reserved, ..
                }) => {
                    assert!(limit == budget && reserved <= limit);
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        } else if roll < 990 {
            let h = order.swap_remove(rng.random_range(0..order.len()));
            let a = ctx.observe().allocation_info(h).expect("info");
            assert_eq!(
                spans.remove(&(a.kind, a.block, a.offset)),
                Some(a.offset + a.reserved)
            );
            model.remove(&h);
            ctx.release(h).expect("release");
            released.push(h);
        } else if roll < 995 && !released.is_empty() {
            let h = released[rng.random_range(0..released.len())];
            assert!(matches!(ctx.release(h), Err(Error::StaleHandle { .. })));
            stale += 1;
        } else if roll < 998 {
            ctx.memory()
                .compact(rng.random_range(1..1u64 << 30))
                .expect("compact");
        } else {
            ctx.memory().trim().expect("trim");
        }
        if released.len() > 4096 {
            released.drain(..2048);
        }
        let s = ctx.stats();
        assert!(s.reserved <= budget, "step {step}: over the budget");
        if s.compaction.allocations_moved != moved {
            moved = s.compaction.allocations_moved;
            rebuild(&mut spans);
            for (h, (_, _, at)) in &model {
                if let Some(at) = at {
                    let a = ctx.observe().allocation_info(*h).expect("info");
                    assert_eq!((a.block, a.offset), *at, "an immovable allocation moved");
                }
            }
        }
        if step % 64 == 0 {
            assert_eq!(s.live, model.len());
            assert_eq!(s.requested, model.values().map(|m| m.0).sum::<u64>());
            assert_eq!(s.in_use, model.values().map(|m| m.1).sum::<u64>());
        }
        if step % 20_000 == 0 {
            ctx.observe()
                .audit()
                .check()
                .unwrap_or_else(|e| panic!("step {step}: {e}"));
            rebuild(&mut spans);
        }
    }
    let s = ctx.stats();
    eprintln!(
        "resizable {resizable}: {ops} operations, {} allocations, {refused} refused, {stale} \
         stale, {} compaction passes moving {} B, peak reserved {} of {budget}",
        s.allocations, s.compaction.passes, s.compaction.bytes_moved, s.peak_reserved
    );
    assert!(
        s.compaction.allocations_moved > 0 && refused > 0,
        "the budget must bite"
    );
    for h in order {
        ctx.release(h).expect("release");
    }
    ctx.observe().audit().check().expect("audit");
    let s = ctx.stats();
    assert_eq!((s.live, s.in_use), (0, 0));
    // Nothing live: every block is one free range (the audit rejects touching free ranges).
    assert_eq!(s.cached_free, s.reserved - s.staging);
}
