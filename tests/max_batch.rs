//! What the budget says fits (`ctx.memory().max_batch`), against what allocations then get,
//! written once and run on host memory and on the GPU.

mod common;

use common::Mk;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, ContextDesc, Error};

const MIB: u64 = 1 << 20;

backend_tests!(max_batch_matches_what_fits);

fn max_batch_matches_what_fits<B: Backend>(mk: Mk<B>) {
    for (budget, item) in [
        (100 * MIB, 33_177_600),
        (40 * MIB, MIB + 1),
        (10 * MIB, 1000),
        (64 * MIB, 20 * MIB),
    ] {
        let ctx = mk(ContextDesc {
            budget: Some(budget),
            ..Default::default()
        });
        // A fresh context leaves room for the staging of a first upload and download: fill it
        // to the prediction, and both still work.
        let fresh = mk(ContextDesc {
            budget: Some(budget),
            ..Default::default()
        });
        let n = fresh.memory().max_batch(item).expect("max_batch");
        let hs: Vec<_> = (0..n)
            .map(|_| {
                fresh
                    .alloc(AllocDesc::new("item", item).uninit())
                    .expect("promised")
            })
            .collect();
        if let Some(&h) = hs.last() {
            fresh.upload(h, &[5; 64]).expect("a first upload fits");
            assert_eq!(fresh.download(h).expect("download")[..64], [5; 64]);
        }
        // One allocation of as many items as `max_items_in_one` says.
        let chunk = 64 << 10;
        let one = mk(ContextDesc {
            budget: Some(budget),
            staging_chunk: chunk,
            ..Default::default()
        });
        let k = one
            .memory()
            .max_items_in_one(item)
            .expect("max_items_in_one");
        assert!(
            k >= n,
            "budget {budget}, item {item}: {k} in one, {n} apart"
        );
        let batch = one
            .alloc(AllocDesc::new("batch", k * item).uninit())
            .unwrap_or_else(|e| panic!("budget {budget}, item {item}: {k} promised: {e}"));
        one.upload(batch, &[6; 64]).expect("a first upload fits");
        assert_eq!(one.download(batch).expect("download")[..64], [6; 64]);
        // The answer is exact but for the room it leaves for first staging buffers.
        one.release(batch).expect("release");
        let k = one
            .memory()
            .max_items_in_one(item)
            .expect("max_items_in_one");
        let batch = one
            .alloc(AllocDesc::new("batch", k * item).uninit())
            .unwrap_or_else(|e| panic!("budget {budget}, item {item}: {k} promised: {e}"));
        one.release(batch).expect("release");
        assert!(
            one.alloc(AllocDesc::new("more", (k + 1) * item + 2 * chunk))
                .is_err(),
            "budget {budget}, item {item}: {} fit in one",
            k + 1
        );
        // Some live memory first, so the pools have free space to count, and staging buffers
        // made: the prediction is then exact.
        let first = ctx.alloc(AllocDesc::new("first", item)).expect("alloc");
        ctx.upload(first, &[1; 4]).expect("upload");
        ctx.download(first).expect("download");
        let predicted = ctx.memory().max_batch(item).expect("max_batch");
        let mut held = vec![first];
        loop {
            match ctx.alloc(AllocDesc::new("item", item).uninit()) {
                Ok(h) => held.push(h),
                Err(Error::OverBudget { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(
            predicted,
            held.len() as u64 - 1,
            "budget {budget}, item {item}"
        );
        assert_eq!(ctx.memory().max_batch(item).expect("max_batch"), 0);
        for h in held {
            ctx.release(h).expect("release");
        }
    }
}
