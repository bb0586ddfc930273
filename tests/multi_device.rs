//! `DeviceSet` on two contexts of one device (host memory, the wgpu adapter, CUDA device 0):
//! placement by room, budgets per device and in total never exceeded, copies between devices
//! exact, statistics summed, wrong-device handles refused.

mod common;

use common::{device_set, random_bytes, Mk};
use rand::{Rng, SeedableRng};
use vramkit::backend::Backend;
use vramkit::devices::DeviceHandle;
use vramkit::{AllocDesc, Error, StaleReason};

const MIB: u64 = 1 << 20;

fn placement_goes_to_the_most_room<B: Backend>(mk: Mk<B>) {
    let s = device_set(mk, &[64 * MIB, 96 * MIB], None);
    // Device 1 has more room until it holds 32 MiB more than device 0.
    let a = s.alloc_anywhere(AllocDesc::new("a", 16 * MIB)).unwrap();
    assert_eq!(a.device, 1);
    let b = s.alloc_anywhere(AllocDesc::new("b", 16 * MIB)).unwrap();
    assert_eq!(b.device, 1);
    // Now equal room (64 − 0 vs 96 − 32, staging aside while no transfer ran): round-robin
    // among ties, so two requests land on both devices.
    let c = s.alloc_anywhere(AllocDesc::new("c", 4 * MIB)).unwrap();
    let d = s.alloc_anywhere(AllocDesc::new("d", 4 * MIB)).unwrap();
    assert_ne!(c.device, d.device, "ties alternate");
    // A request only the roomier device can hold goes there.
    s.release(a).unwrap();
    s.release(b).unwrap();
    let big = s.alloc_anywhere(AllocDesc::new("big", 64 * MIB)).unwrap();
    assert_eq!(big.device, 1);
    // One that no device can hold is the last refusal, typed.
    assert!(matches!(
        s.alloc_anywhere(AllocDesc::new("huge", 200 * MIB)),
        Err(Error::OverBudget { .. })
    ));
}

fn budgets_and_the_total_hold_under_random_traffic<B: Backend>(mk: Mk<B>) {
    let total = 72 * MIB;
    let budgets = [48 * MIB, 48 * MIB];
    let s = device_set(mk, &budgets, Some(total));
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let mut live: Vec<DeviceHandle> = Vec::new();
    let (mut refused, mut made) = (0, 0);
    for step in 0..300 {
        if !live.is_empty() && rng.random_bool(0.4) {
            let h = live.swap_remove(rng.random_range(0..live.len()));
            s.release(h).unwrap();
        } else {
            let size = rng.random_range(1..6 * MIB);
            let r = if rng.random_bool(0.5) {
                s.alloc_anywhere(AllocDesc::new("x", size))
            } else {
                s.alloc_on(rng.random_range(0..2), AllocDesc::new("x", size))
            };
            match r {
                Ok(h) => {
                    made += 1;
                    live.push(h);
                }
                Err(Error::OverBudget { .. }) => refused += 1,
                Err(e) => panic!("step {step}: {e}"),
            }
        }
        let stats = s.stats();
        assert!(stats.reserved <= total, "step {step}: {stats}");
        for (i, d) in stats.per_device.iter().enumerate() {
            assert!(d.reserved <= budgets[i], "step {step}: device {i}: {stats}");
        }
        assert_eq!(stats.live, live.len());
    }
    assert!(made > 50 && refused > 0, "{made} made, {refused} refused");
}

fn copies_between_devices_are_exact<B: Backend>(mk: Mk<B>) {
    let s = device_set(mk, &[64 * MIB, 64 * MIB], None);
    let chunk = 64 << 10;
    for (k, len) in [1u64, 4095, chunk, chunk + 1, 3 * chunk + 5, 2 * MIB + 3]
        .into_iter()
        .enumerate()
    {
        let data = random_bytes(len as usize, k as u64);
        let a = s.alloc_on(0, AllocDesc::new("a", len)).unwrap();
        let b = s.alloc_on(1, AllocDesc::new("b", len + 8)).unwrap();
        let c = s.alloc_on(1, AllocDesc::new("c", len)).unwrap();
        s.device(0).unwrap().upload(a.handle, &data).unwrap();
        s.copy(a, b).unwrap();
        assert!(
            matches!(s.copy(b, c), Err(Error::ShapeMismatch { .. })),
            "a destination smaller than the source"
        );
        let back = s.device(1).unwrap().download(b.handle).unwrap();
        assert_eq!(&back[..len as usize], &data[..], "0 → 1, {len} bytes");
        assert!(
            back[len as usize..].iter().all(|&x| x == 0),
            "past the copy: untouched"
        );
        // Back the other way, and within one device.
        let d = s.alloc_on(0, AllocDesc::new("d", len)).unwrap();
        s.copy(a, c).unwrap();
        s.copy(c, d).unwrap();
        assert_eq!(s.device(0).unwrap().download(d.handle).unwrap(), data);
        let e = s.alloc_on(0, AllocDesc::new("e", len)).unwrap();
        s.copy(d, e).unwrap();
        assert_eq!(s.device(0).unwrap().download(e.handle).unwrap(), data);
        for h in [a, b, c, d, e] {
            s.release(h).unwrap();
        }
    }
}

fn statistics_are_summed<B: Backend>(mk: Mk<B>) {
    let s = device_set(mk, &[64 * MIB, 32 * MIB], Some(80 * MIB));
    let a = s.alloc_on(0, AllocDesc::new("a", 3 * MIB)).unwrap();
    let _b = s.alloc_on(1, AllocDesc::new("b", 5 * MIB + 1)).unwrap();
    let _c = s.alloc_on(1, AllocDesc::new("c", 1000)).unwrap();
    let stats = s.stats();
    let per: Vec<_> = s.devices().iter().map(|c| c.stats()).collect();
    assert_eq!(stats.per_device, per);
    assert_eq!(stats.requested, 3 * MIB + 5 * MIB + 1 + 1000);
    assert_eq!(stats.in_use, per[0].in_use + per[1].in_use);
    assert_eq!(stats.reserved, per[0].reserved + per[1].reserved);
    assert_eq!(stats.live, 3);
    assert_eq!(stats.total_budget, Some(80 * MIB));
    assert!(stats.to_string().contains("2 devices"));
    let summary = s.summary();
    assert!(summary.starts_with(&stats.to_string()), "{summary}");
    for (i, ctx) in s.devices().iter().enumerate() {
        // Each device's own table, after its header (minus the peaks' lines that change).
        let table = ctx.observe().summary();
        let first = table.lines().next().unwrap();
        assert!(
            summary.contains(&format!("== device {i}\n{first}")),
            "{summary}"
        );
    }
    // max_batch: the devices' own answers summed, within the total's room.
    let per_item = 4 * MIB;
    let sum: u64 = s
        .devices()
        .iter()
        .map(|c| c.memory().max_batch(per_item).unwrap())
        .sum();
    let room = (80 * MIB - stats.reserved) / per_item;
    assert_eq!(s.max_batch(per_item).unwrap(), sum.min(room));
    s.release(a).unwrap();
    assert_eq!(s.stats().live, 2);
}

fn wrong_device_handles_are_refused<B: Backend>(mk: Mk<B>) {
    let s = device_set(mk, &[16 * MIB, 16 * MIB], None);
    let a = s.alloc_on(0, AllocDesc::new("a", 1024)).unwrap();
    let lying = DeviceHandle { device: 1, ..a };
    assert!(matches!(
        s.release(lying),
        Err(Error::StaleHandle {
            reason: StaleReason::ForeignContext
        })
    ));
    let b = s.alloc_on(1, AllocDesc::new("b", 1024)).unwrap();
    assert!(matches!(s.copy(lying, b), Err(Error::StaleHandle { .. })));
    let past = DeviceHandle { device: 2, ..a };
    assert!(matches!(
        s.release(past),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        s.alloc_on(7, AllocDesc::new("x", 1)),
        Err(Error::InvalidParameter { .. })
    ));
    s.release(a).unwrap();
    assert!(matches!(
        s.release(a),
        Err(Error::StaleHandle {
            reason: StaleReason::Released
        })
    ));
}

fn copies_in_opposite_directions_at_once<B: Backend>(mk: Mk<B>) {
    let s = device_set(mk, &[64 * MIB, 64 * MIB], None);
    let len = 5 * (64 << 10) + 3;
    let data: Vec<Vec<u8>> = (0..2).map(|d| random_bytes(len, 40 + d)).collect();
    let src: Vec<DeviceHandle> = (0..2)
        .map(|d| {
            let h = s.alloc_on(d, AllocDesc::new("src", len as u64)).unwrap();
            s.device(d).unwrap().upload(h.handle, &data[d]).unwrap();
            h
        })
        .collect();
    let dst: Vec<DeviceHandle> = (0..2)
        .map(|d| s.alloc_on(d, AllocDesc::new("dst", len as u64)).unwrap())
        .collect();
    // 0 → 1 on one thread while 1 → 0 runs on another, many times: no order of the two
    // contexts' staging locks may wait for the other.
    std::thread::scope(|t| {
        t.spawn(|| {
            (0..20).for_each(|_| {
                s.copy(src[0], dst[1]).unwrap();
            })
        });
        t.spawn(|| {
            (0..20).for_each(|_| {
                s.copy(src[1], dst[0]).unwrap();
            })
        });
    });
    assert_eq!(
        s.device(1).unwrap().download(dst[1].handle).unwrap(),
        data[0]
    );
    assert_eq!(
        s.device(0).unwrap().download(dst[0].handle).unwrap(),
        data[1]
    );
    // The set's contexts are shared: owning handles work on them.
    let owned = s
        .device(0)
        .unwrap()
        .alloc_owned(AllocDesc::new("owned", 64))
        .unwrap();
    drop(owned);
    assert_eq!(s.stats().live, 4);
}

backend_tests!(
    placement_goes_to_the_most_room,
    the_total_reclaims_other_devices_cached_memory_before_refusing,
    budgets_and_the_total_hold_under_random_traffic,
    copies_between_devices_are_exact,
    copies_in_opposite_directions_at_once,
    statistics_are_summed,
    wrong_device_handles_are_refused,
);

/// Under a set's total, memory another device only caches (empty blocks of released
/// allocations) goes back before a request is refused; a refusal's figures are measured after
/// every remedy and say what fits, and that much then fits.
fn the_total_reclaims_other_devices_cached_memory_before_refusing<B: Backend>(mk: Mk<B>) {
    let s = device_set(mk, &[64 * MIB, 64 * MIB], Some(48 * MIB));
    // Device 1 holds 32 MiB, then only caches it.
    let a = s.alloc_on(1, AllocDesc::new("a", 32 * MIB)).expect("alloc");
    s.release(a).expect("release");
    assert!(
        s.stats().reserved >= 32 * MIB,
        "the test needs cached memory on device 1"
    );
    let b = s
        .alloc_on(0, AllocDesc::new("b", 24 * MIB))
        .expect("device 1's cached memory goes back first");
    // Over the total with nothing cached: refused, and what it says fits, fits.
    let e = s.alloc_on(0, AllocDesc::new("c", 40 * MIB)).unwrap_err();
    let Error::OverBudget {
        fits_now, reserved, ..
    } = e
    else {
        panic!("{e:?}");
    };
    assert!(reserved >= 24 * MIB, "measured with b live: {reserved}");
    let c = s
        .alloc_on(0, AllocDesc::new("fits now", fits_now))
        .expect("fits_now fits");
    s.release(c).expect("release");
    s.release(b).expect("release");
}
