//! Matmul split across a [`DeviceSet`]: `C = A·B` (f32, row-major) with A's rows in one band
//! per device, B copied to every device but its own (the band there uses B where it is), and
//! the bands of C gathered into C. Three passes: the
//! bands' inputs are copied to their devices, then every band's [`matmul_with`] is recorded and
//! submitted (the devices compute at once: no copy waits behind another device's matmul), then
//! C's bands are gathered; the copies go through [`DeviceSet::copy_range`].
//!
//! Every element of C is one row of A times one column of B on one device, so a band computes
//! the elements the whole would: with vramkit's kernels the result equals the one-device result
//! bit for bit (a vendor BLAS may pick another algorithm for a band's shape, within the same
//! error bound).

use super::{DeviceHandle, DeviceSet};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::kernels::{matmul_with, MatmulDims, MatmulKernel};
use crate::AllocDesc;

/// One band: its device, first row, rows, its A, B and C there, and which of them it made.
struct Band {
    device: usize,
    row0: u64,
    rows: u64,
    /// A band, B and C band, once made or found.
    mats: Vec<DeviceHandle>,
    temps: Vec<DeviceHandle>,
}

impl<B: Backend> DeviceSet<B> {
    /// `C = A·B` with A (M×K), B (K×N) and C (M×N) f32, row-major, on any devices of the set:
    /// A's rows split as evenly as whole rows allow over the first `min(len, M)` devices, each
    /// band multiplied there by `kernel` with a copy of B (or B itself on B's device), C's
    /// bands copied into `c`. The bands' temporaries are allocated through the set (its
    /// budgets hold) and released before it returns, also when it fails.
    ///
    /// # Errors
    /// As [`split_matmul_rows`](Self::split_matmul_rows).
    pub fn split_matmul(
        &self,
        a: DeviceHandle,
        b: DeviceHandle,
        c: DeviceHandle,
        d: MatmulDims,
        kernel: MatmulKernel,
    ) -> Result<()> {
        let parts = (self.len() as u32).min(d.m).max(1);
        let rows: Vec<u32> = (0..self.len() as u32)
            .map(|i| {
                if i < parts {
                    d.m / parts + u32::from(i < d.m % parts)
                } else {
                    0
                }
            })
            .collect();
        self.split_matmul_rows(a, b, c, d, kernel, &rows)
    }

    /// [`split_matmul`](Self::split_matmul) with the rows of A each device takes, in device
    /// order (0 leaves a device out; they add up to M): to give the device that holds B, or
    /// the faster one, more rows. Measured on two H200s (`benches/devices.rs`), 8192³ split
    /// evenly is 1.72× one device, the other device's band waiting for its copy of B.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for rows that are not one count per device or do not add up
    /// to M; [`Error::ShapeMismatch`] for an allocation smaller than its matrix, a matrix past
    /// 2⁶⁴ bytes or a zero dimension; as [`matmul_with`] on each device,
    /// [`DeviceSet::alloc_on`] and [`DeviceSet::copy_range`].
    pub fn split_matmul_rows(
        &self,
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
        let total: u64 = rows.iter().map(|&r| u64::from(r)).sum();
        if rows.len() != self.len() || total != m {
            return Err(Error::InvalidParameter {
                name: "rows",
                value: format!("{rows:?} for {} devices and M = {m}", self.len()),
                reason: "give one row count per device of the set, adding up to M",
            });
        }
        for (h, need, what) in [
            (a, bytes(m, k)?, "A"),
            (b, bytes(k, n)?, "B"),
            (c, bytes(m, n)?, "C"),
        ] {
            let size = self.device(h.device)?.size_of(h.handle)?;
            if size < need {
                return Err(Error::ShapeMismatch {
                    expected: format!("{what} of at least {need} bytes for {d:?}"),
                    actual: format!("{size} bytes"),
                });
            }
        }
        let mut bands = Vec::new();
        let mut row0 = 0;
        for (device, &r) in rows.iter().enumerate() {
            if r > 0 {
                bands.push(Band {
                    device,
                    row0,
                    rows: u64::from(r),
                    mats: Vec::new(),
                    temps: Vec::new(),
                });
            }
            row0 += u64::from(r);
        }
        let result = self.run_bands(&mut bands, a, b, c, d, kernel);
        // Release every temporary, whatever happened; the first error wins.
        let mut released = Ok(());
        for h in bands.iter().flat_map(|band| &band.temps) {
            if let Err(e) = self.release(*h) {
                released = released.and(Err(e));
            }
        }
        result.and(released)
    }

    /// The three passes of [`split_matmul`](Self::split_matmul) over `bands`, each band's
    /// temporaries recorded in it as they are made.
    fn run_bands(
        &self,
        bands: &mut [Band],
        a: DeviceHandle,
        b: DeviceHandle,
        c: DeviceHandle,
        d: MatmulDims,
        kernel: MatmulKernel,
    ) -> Result<()> {
        let (n, k) = (u64::from(d.n), u64::from(d.k));
        for band in bands.iter_mut() {
            for (label, bytes) in [
                ("split matmul A band", 4 * band.rows * k),
                ("split matmul B", 4 * k * n),
                ("split matmul C band", 4 * band.rows * n),
            ] {
                if label == "split matmul B" && band.device == b.device {
                    band.mats.push(b);
                    continue;
                }
                let h = self.alloc_on(band.device, AllocDesc::new(label, bytes))?;
                band.temps.push(h);
                band.mats.push(h);
                if label == "split matmul B" {
                    self.copy_range(b, 0, h, 0, 4 * k * n)?;
                }
            }
            if let Some(&ab) = band.mats.first() {
                self.copy_range(a, 4 * band.row0 * k, ab, 0, 4 * band.rows * k)?;
            }
        }
        for band in bands.iter() {
            let ctx = self.device(band.device)?;
            let dims = MatmulDims {
                m: u32::try_from(band.rows).unwrap_or(u32::MAX),
                ..d
            };
            let &[ab, bb, cb] = band.mats.as_slice() else {
                return Err(Error::Internal {
                    message: "a split matmul band without its three matrices".into(),
                });
            };
            let (ab, bb, cb) = (ab.handle, bb.handle, cb.handle);
            matmul_with(ctx, ab, bb, cb, dims, kernel)?;
            ctx.submit()?;
        }
        for band in bands.iter() {
            if let Some(&cb) = band.mats.get(2) {
                self.copy_range(cb, 0, c, 4 * band.row0 * n, 4 * band.rows * n)?;
            }
        }
        Ok(())
    }
}
