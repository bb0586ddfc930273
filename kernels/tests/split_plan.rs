//! `kernels::balanced_rows` (the rows of a split matmul per device) against a step-by-step
//! simulation of the split and, for small cases, every possible split. Host contexts only: the
//! plan is arithmetic over the set's size.

use vramkit::devices::DeviceSet;
use vramkit::{ContextDesc, Error};
use vramkit_kernels as kernels;

/// The time a split by `rows` takes, simulated step by step as `split_matmul_rows` runs: the
/// copies out of `home` one after another over one link (B and each band of A), each device's
/// band once its inputs are in (home's once all its copies are done), and the bands of C back
/// to home one after another once home's band and theirs are done.
fn simulated_split(rows: &[u32], home: usize, n: f64, k: f64, row: f64, link: f64) -> f64 {
    let mut sent = 0.0;
    let mut done = vec![0.0; rows.len()];
    for (i, &r) in rows.iter().enumerate() {
        if i != home && r > 0 {
            sent += 4.0 * k * (n + f64::from(r)) / link;
            done[i] = sent + f64::from(r) * row;
        }
    }
    let mut end = sent + f64::from(rows[home]) * row;
    for (i, &r) in rows.iter().enumerate() {
        if i != home && r > 0 {
            end = end.max(done[i]) + 4.0 * n * f64::from(r) / link;
        }
    }
    end
}

/// `balanced_rows` against a step-by-step simulation of the split: no other split tried
/// (even over every count of devices, home alone, rows moved between home and another
/// device) is faster; the rows add up to M, home takes some, two devices split evenly; the
/// limits (an infinite link: even over all; a link too slow to pay: everything at home) hold.
#[test]
fn balanced_rows_finish_soonest() {
    use vramkit_kernels::MatmulDims;
    let host = |_| vramkit::Context::host(ContextDesc::default());
    for devices in [1usize, 2, 3, 8] {
        let s = DeviceSet::from_contexts((0..devices).map(host).collect(), None).unwrap();
        for (m, nk, row, link) in [
            (8192u32, 8192u32, 2.64e-6, 373e9),
            (4096, 1024, 1e-7, 20e9),
            (4096, 1024, 1e-7, 2e9),
            (100, 300, 1e-5, 1e12),
            (5, 64, 1e-6, 1e12),
        ] {
            let d = MatmulDims { m, n: nk, k: nk };
            let (n, k) = (f64::from(nk), f64::from(nk));
            for home in 0..devices {
                let rows = kernels::balanced_rows(&s, d, home, row, link).unwrap();
                let what = format!("{devices} devices, {d:?}, home {home}: {rows:?}");
                assert_eq!(
                    rows.iter().map(|&r| u64::from(r)).sum::<u64>(),
                    u64::from(m)
                );
                assert!(rows[home] > 0, "{what}");
                if devices <= 2 {
                    // Two devices: the other's band waits for B and its A band, home's too
                    // (the copies hold its stream), C's band comes back after both: even.
                    let used: Vec<u32> = rows.iter().copied().filter(|&r| r > 0).collect();
                    let spread = used.iter().max().unwrap() - used.iter().min().unwrap();
                    assert!(spread <= 1, "{what}");
                }
                let time = simulated_split(&rows, home, n, k, row, link);
                let mut others: Vec<Vec<u32>> = (1..=devices.min(m as usize))
                    .map(|c| {
                        let mut r = vec![0; devices];
                        let order =
                            std::iter::once(home).chain((0..devices).filter(|&i| i != home));
                        for (slot, i) in order.take(c).enumerate() {
                            r[i] = m / c as u32 + u32::from((slot as u32) < m % c as u32);
                        }
                        r
                    })
                    .collect();
                for i in (0..devices).filter(|&i| i != home && rows[i] > 1) {
                    for shift in [1, rows[i] / 10, rows[i] / 2] {
                        let (mut to_home, mut from_home) = (rows.clone(), rows.clone());
                        to_home[i] -= shift;
                        to_home[home] += shift;
                        if rows[home] > shift {
                            from_home[i] += shift;
                            from_home[home] -= shift;
                            others.push(from_home);
                        }
                        others.push(to_home);
                    }
                }
                for other in &others {
                    let t = simulated_split(other, home, n, k, row, link);
                    assert!(
                        time <= t * (1.0 + 1e-9) + row,
                        "{what} takes {time}, {other:?} {t}"
                    );
                }
            }
            let even = kernels::balanced_rows(&s, d, 0, row, f64::INFINITY).unwrap();
            assert!(
                even.iter()
                    .all(|&r| r.abs_diff(m / devices.min(m as usize) as u32) <= 1
                        || r == 0 && m < devices as u32),
                "{even:?}"
            );
        }
        // Small cases against the true optimum: every split of M rows over the devices.
        if devices <= 3 {
            for (m, nk, row, link) in [
                (12u32, 8u32, 1e-6, 1e9),
                (12, 64, 1e-6, 5e8),
                (9, 256, 1e-5, 4e9),
                (11, 32, 1e-7, 1e10),
            ] {
                let d = MatmulDims { m, n: nk, k: nk };
                let (n, k) = (f64::from(nk), f64::from(nk));
                let mut splits: Vec<Vec<u32>> = vec![vec![]];
                for _ in 0..devices {
                    splits = splits
                        .into_iter()
                        .flat_map(|p| (0..=m).map(move |r| [p.clone(), vec![r]].concat()))
                        .collect();
                }
                for home in 0..devices {
                    let best = splits
                        .iter()
                        .filter(|r| r.iter().sum::<u32>() == m && r[home] > 0)
                        .map(|r| simulated_split(r, home, n, k, row, link))
                        .fold(f64::INFINITY, f64::min);
                    let rows = kernels::balanced_rows(&s, d, home, row, link).unwrap();
                    let t = simulated_split(&rows, home, n, k, row, link);
                    assert!(
                        t <= best * (1.0 + 1e-9),
                        "{devices} devices, {d:?}, home {home}: {rows:?} takes {t}, the best {best}"
                    );
                }
            }
        }
        // Times past f64's range: a plan still, every row placed.
        let huge = kernels::balanced_rows(
            &s,
            MatmulDims {
                m: u32::MAX,
                n: 8,
                k: 8,
            },
            0,
            1e300,
            1e-300,
        )
        .unwrap();
        assert_eq!(
            huge.iter().map(|&r| u64::from(r)).sum::<u64>(),
            u64::from(u32::MAX)
        );
        assert!(matches!(
            kernels::balanced_rows(&s, MatmulDims { m: 0, n: 4, k: 4 }, 0, 1e-6, 1e9),
            Err(Error::ShapeMismatch { .. })
        ));
        let slow = kernels::balanced_rows(
            &s,
            MatmulDims {
                m: 64,
                n: 64,
                k: 64,
            },
            0,
            1e-9,
            1.0,
        )
        .unwrap();
        assert_eq!(slow[0], 64, "a link too slow to pay: everything at home");
        assert!(matches!(
            kernels::balanced_rows(&s, MatmulDims { m: 4, n: 4, k: 4 }, devices, 1e-6, 1e9),
            Err(Error::InvalidParameter { .. })
        ));
        assert!(matches!(
            kernels::balanced_rows(&s, MatmulDims { m: 4, n: 4, k: 4 }, 0, f64::NAN, 1e9),
            Err(Error::InvalidParameter { .. })
        ));
    }
}
