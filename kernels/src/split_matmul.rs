//! Matmul split across a [`DeviceSet`]: `C = A·B` (f32, row-major) with A's rows in one band
//! per device, B copied to every device but its own, and the bands of C gathered into C. A
//! matrix is used where it lies when it is on the band's device: B always, A and C for the band
//! that starts at row 0 (the kernel reads and writes only their first rows), which goes to A's
//! device (else C's) when it takes rows; so the band on the device holding A, B and C makes no
//! copies and no temporaries. The other bands follow in device order. Three passes: the bands'
//! inputs are copied to their devices, then every band's [`matmul_with`] is recorded and
//! submitted, then C's bands are gathered; the copies go through [`DeviceSet::copy_range`].
//!
//! Timing follows from the copies' stream order ([`DeviceSet::copy`]: both sides' later work
//! waits for a copy): the device the inputs come from starts its band only once the copies
//! out of it finished, and the gathers into C's device run after its own band. A split pays
//! when the other devices' share of compute outweighs those copies; see
//! [`balanced_rows`](super::balanced_rows) for the model.
//!
//! Every element of C is one row of A times one column of B on one device, so a band computes
//! the elements the whole would: with vramkit's kernels the result equals the one-device result
//! bit for bit (a vendor BLAS may pick another algorithm for a band's shape, within the same
//! error bound).

use super::{matmul_with, MatmulDims, MatmulKernel};
use vramkit::backend::Backend;
use vramkit::devices::{DeviceHandle, DeviceSet};
use vramkit::AllocDesc;
use vramkit::{Error, Result};

/// One band: its device, first row, rows, its A, B and C there, and which of them it made.
struct Band {
    device: usize,
    row0: u64,
    rows: u64,
    /// A band, B and C band, once made or found.
    mats: Vec<DeviceHandle>,
    temps: Vec<DeviceHandle>,
}

/// `C = A·B` with A (M×K), B (K×N) and C (M×N) f32, row-major, on any devices of the set:
/// A's rows split as evenly as whole rows allow over the first `min(len, M)` devices, each
/// band multiplied there by `kernel` with a copy of B (or B itself on B's device), C's
/// bands copied into `c`. The bands' temporaries are allocated through the set (its
/// budgets hold) and released before it returns, also when it fails.
///
/// # Errors
/// As [`split_matmul_rows`](split_matmul_rows).
pub fn split_matmul<B: Backend>(
    set: &DeviceSet<B>,
    a: DeviceHandle,
    b: DeviceHandle,
    c: DeviceHandle,
    d: MatmulDims,
    kernel: MatmulKernel,
) -> Result<()> {
    let parts = (set.len() as u32).min(d.m).max(1);
    let rows: Vec<u32> = (0..set.len() as u32)
        .map(|i| {
            if i < parts {
                d.m / parts + u32::from(i < d.m % parts)
            } else {
                0
            }
        })
        .collect();
    split_matmul_rows(set, a, b, c, d, kernel, &rows)
}

/// [`split_matmul`](split_matmul) with the rows of A each device takes, in device
/// order (0 leaves a device out; they add up to M): to leave out a device that would not
/// pay for its copies, or give a faster one more rows ([`balanced_rows`](super::balanced_rows)
/// plans them). Measured on two H200s (`benches/devices.rs`), 8192³ split evenly is 1.75×
/// one device: both bands wait for B and the other band's A to reach the other device.
///
/// # Errors
/// [`Error::InvalidParameter`] for rows that are not one count per device or do not add up
/// to M, or C the same allocation as A or B; [`Error::ShapeMismatch`] for an allocation smaller than its matrix, a matrix past
/// 2⁶⁴ bytes or a zero dimension; as [`matmul_with`] on each device,
/// [`DeviceSet::alloc_on`] and [`DeviceSet::copy_range`].
pub fn split_matmul_rows<B: Backend>(
    set: &DeviceSet<B>,
    a: DeviceHandle,
    b: DeviceHandle,
    c: DeviceHandle,
    d: MatmulDims,
    kernel: MatmulKernel,
    rows: &[u32],
) -> Result<()> {
    let (m, n, k) = (u64::from(d.m), u64::from(d.n), u64::from(d.k));
    let bytes = |rows: u64, cols: u64| {
        rows.checked_mul(cols)
            .and_then(|e| e.checked_mul(4))
            .ok_or_else(|| Error::ShapeMismatch {
                expected: "matrices of at most 2⁶⁴ bytes".into(),
                actual: format!("{d:?}"),
            })
    };
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::ShapeMismatch {
            expected: "M, N and K of at least 1".into(),
            actual: format!("{d:?}"),
        });
    }
    for (what, operand) in [("A", a), ("B", b)] {
        if operand == c {
            return Err(Error::InvalidParameter {
                name: "matmul output",
                value: format!("C is the same allocation as {what}"),
                reason: "a band's C can be written while another band still reads A and B: \
                         give C an allocation of its own",
            });
        }
    }
    let total: u64 = rows.iter().map(|&r| u64::from(r)).sum();
    if rows.len() != set.len() || total != m {
        return Err(Error::InvalidParameter {
            name: "rows",
            value: format!("{rows:?} for {} devices and M = {m}", set.len()),
            reason: "give one row count per device of the set, adding up to M",
        });
    }
    for (h, need, what) in [
        (a, bytes(m, k)?, "A"),
        (b, bytes(k, n)?, "B"),
        (c, bytes(m, n)?, "C"),
    ] {
        let size = set.device(h.device)?.observe().size_of(h.handle)?;
        if size < need {
            return Err(Error::ShapeMismatch {
                expected: format!("{what} of at least {need} bytes for {d:?}"),
                actual: format!("{size} bytes"),
            });
        }
    }
    // The band from row 0 goes to A's device (else C's) where it has rows, so that it
    // uses them in place; the others follow in device order.
    let first = [a.device, c.device]
        .into_iter()
        .find(|&i| rows.get(i).is_some_and(|&r| r > 0));
    let order = first
        .into_iter()
        .chain((0..rows.len()).filter(|&i| Some(i) != first));
    let mut bands = Vec::new();
    let mut row0 = 0;
    for device in order {
        let r = u64::from(rows[device]);
        if r > 0 {
            bands.push(Band {
                device,
                row0,
                rows: r,
                mats: Vec::new(),
                temps: Vec::new(),
            });
        }
        row0 += r;
    }
    let result = run_bands(set, &mut bands, a, b, c, d, kernel);
    // Release every temporary, whatever happened; the first error wins.
    let mut released = Ok(());
    for h in bands.iter().flat_map(|band| &band.temps) {
        if let Err(e) = set.release(*h) {
            released = released.and(Err(e));
        }
    }
    result.and(released)
}

/// The three passes of [`split_matmul`](split_matmul) over `bands`, each band's
/// temporaries recorded in it as they are made.
fn run_bands<B: Backend>(
    set: &DeviceSet<B>,
    bands: &mut [Band],
    a: DeviceHandle,
    b: DeviceHandle,
    c: DeviceHandle,
    d: MatmulDims,
    kernel: MatmulKernel,
) -> Result<()> {
    let (n, k) = (u64::from(d.n), u64::from(d.k));
    for band in bands.iter_mut() {
        // A matrix on the band's device is used where it lies: B always, A and C when the
        // band starts at row 0 (the kernel reads and writes the first rows only).
        let in_place = |h: DeviceHandle, rows_from_0: bool| {
            (h.device == band.device && (rows_from_0 || band.row0 == 0)).then_some(h)
        };
        for (label, bytes, there) in [
            ("split matmul A band", 4 * band.rows * k, in_place(a, false)),
            ("split matmul B", 4 * k * n, in_place(b, true)),
            ("split matmul C band", 4 * band.rows * n, in_place(c, false)),
        ] {
            if let Some(h) = there {
                band.mats.push(h);
                continue;
            }
            let h = set.alloc_on(band.device, AllocDesc::new(label, bytes))?;
            band.temps.push(h);
            band.mats.push(h);
            if label == "split matmul B" {
                set.copy_range(b, 0, h, 0, bytes)?;
            } else if label == "split matmul A band" {
                set.copy_range(a, 4 * band.row0 * k, h, 0, bytes)?;
            }
        }
    }
    for band in bands.iter() {
        let ctx = set.device(band.device)?;
        let dims = MatmulDims {
            m: u32::try_from(band.rows).unwrap_or(u32::MAX),
            ..d
        };
        let &[ab, bb, cb] = band.mats.as_slice() else {
            return Err(Error::Internal {
                message: "a split matmul band without its three matrices".into(),
            });
        };
        matmul_with(ctx, ab.handle, bb.handle, cb.handle, dims, kernel)?;
        ctx.submit()?;
    }
    for band in bands.iter() {
        match band.mats.get(2) {
            Some(&cb) if cb != c => {
                set.copy_range(cb, 0, c, 4 * band.row0 * n, 4 * band.rows * n)?;
            }
            _ => {}
        }
    }
    Ok(())
}
