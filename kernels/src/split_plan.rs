//! Rows per device for [`split_matmul_rows`](super::split_matmul_rows) that finish soonest, from a model of
//! the split as it runs (`matmul.rs`): the device holding A, B and C (`home`) sends B and a
//! band of A to each other device it uses, one after another over its link, and starts its own
//! band only once those copies finished (a copy holds both devices' streams); each other device
//! computes its band once its inputs are in; C's bands come back to `home` one after another,
//! each once `home`'s band and its own are done. The plan starts from the best even split over
//! some number of devices and moves rows between devices while that shortens the modelled time.
//! Measured on two H200s, 8192³ split evenly waited 1.1 ms for B and A's band and 0.4 ms for
//! C's band (12.31 ms against 12.27 modelled, 1.75× one GPU), and a twentieth of the rows
//! more on `home` took 13.51 ms against 13.25 modelled: with two devices the best is even.

use super::MatmulDims;
use vramkit::backend::Backend;
use vramkit::devices::DeviceSet;
use vramkit::{Error, Result};

/// The modelled seconds of a split by `rows` (see the [module docs](self)).
fn modelled(rows: &[u32], home: usize, d: MatmulDims, row: f64, link: f64) -> f64 {
    let (n, k) = (f64::from(d.n), f64::from(d.k));
    let others = || {
        rows.iter()
            .enumerate()
            .filter(|&(i, &r)| i != home && r > 0)
    };
    let mut sent = 0.0;
    let mut done = vec![0.0; rows.len()];
    for (i, &r) in others() {
        sent += 4.0 * k * (n + f64::from(r)) / link;
        done[i] = sent + f64::from(r) * row;
    }
    let mut end = sent + f64::from(rows[home]) * row;
    for (i, &r) in others() {
        end = end.max(done[i]) + 4.0 * n * f64::from(r) / link;
    }
    end
}

/// Rows of A per device (for [`split_matmul_rows`](super::split_matmul_rows)) that finish
/// soonest when A, B and C lie on device `home`, a row of the matmul takes `row_seconds`
/// on any device, and copies between devices run at `link_bytes_per_second` (measure both:
/// a matmul on one device divided by M, and a [`copy`](DeviceSet::copy) between two). The model
/// follows the split as it runs: B and each band of A sent from `home` one after another,
/// `home`'s band once those copies are done, each other band once its inputs are in, C's
/// bands back to `home` one after another. Devices that would not shorten the split get no
/// rows; where the link is too slow to pay, `home` takes them all.
///
/// # Errors
/// [`Error::InvalidParameter`] for a `home` past the set, or a time or rate that is not a
/// positive number (an infinite link is allowed: every device, evenly);
/// [`Error::ShapeMismatch`] for a zero dimension.
pub fn balanced_rows<B: Backend>(
    set: &DeviceSet<B>,
    d: MatmulDims,
    home: usize,
    row_seconds: f64,
    link_bytes_per_second: f64,
) -> Result<Vec<u32>> {
    set.device(home)?;
    if d.m == 0 || d.n == 0 || d.k == 0 {
        return Err(Error::ShapeMismatch {
            expected: "M, N and K of at least 1".into(),
            actual: format!("{d:?}"),
        });
    }
    for (name, v) in [
        ("row_seconds", row_seconds),
        ("link_bytes_per_second", link_bytes_per_second),
    ] {
        if v.is_nan() || v <= 0.0 || (name == "row_seconds" && v.is_infinite()) {
            return Err(Error::InvalidParameter {
                name,
                value: v.to_string(),
                reason: "a positive, finite time and a positive rate",
            });
        }
    }
    let devices = set.len();
    let time = |rows: &[u32]| modelled(rows, home, d, row_seconds, link_bytes_per_second);
    // Even over home and the first `c − 1` others, the remainder a row each from home on.
    let even = |c: usize| {
        let mut rows = vec![0; devices];
        let order = std::iter::once(home).chain((0..devices).filter(|&i| i != home));
        for (slot, device) in order.take(c).enumerate() {
            rows[device] = d.m / c as u32 + u32::from((slot as u32) < d.m % c as u32);
        }
        rows
    };
    // The best even split, home alone first (it stays where every time is infinite).
    let timed = |c: usize| {
        let r = even(c);
        let t = time(&r);
        (r, t)
    };
    let (mut rows, mut now) = (2..=devices.min(d.m as usize))
        .map(timed)
        .fold(timed(1), |best, x| if x.1 < best.1 { x } else { best });
    // Move rows from one device to another while that helps, in halving steps.
    let mut step = d.m / 4;
    while step > 0 {
        let mut moved = false;
        for (from, to) in (0..devices).flat_map(|f| (0..devices).map(move |t| (f, t))) {
            if from != to && rows[from] >= step {
                let mut tried = rows.clone();
                tried[from] -= step;
                tried[to] += step;
                let t = time(&tried);
                if tried[home] > 0 && t < now {
                    (rows, now) = (tried, t);
                    moved = true;
                }
            }
        }
        if !moved {
            step /= 2;
        }
    }
    Ok(rows)
}
