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
    let all = ctx.allocations();
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
                    match ctx.upload_at(h, offset, &vec![byte; len as usize]) {
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
                    ctx.trim().expect("trim");
                }
                _ => {}
            }
            check_invariants(&ctx, &model, budget);
        }
    }
}
