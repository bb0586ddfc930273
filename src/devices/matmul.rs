//! Matmul split across a [`DeviceSet`]: `C = A·B` (f32, row-major) with A's rows in one band
//! per device, B copied to every device, and the bands of C gathered into C. Each band runs
//! [`matmul_with`] on its device, all bands recorded before any is gathered, so the devices
//! compute at once; the copies go through [`DeviceSet::copy_range`].
//!
//! Every element of C is one row of A times one column of B on one device, so a band computes
//! the elements the whole would: with the same kernel on devices of one kind the result equals
//! the one-device result bit for bit (a vendor BLAS may pick another algorithm for a band's
//! shape, within the same error bound).

use super::{DeviceHandle, DeviceSet};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::kernels::{matmul_with, MatmulDims, MatmulKernel};
use crate::AllocDesc;

impl<B: Backend> DeviceSet<B> {
    /// `C = A·B` with A (M×K), B (K×N) and C (M×N) f32, row-major, on any devices of the set:
    /// A's rows split as evenly as whole rows allow over the first `min(len, M)` devices, each
    /// band (with a copy of B) multiplied there by `kernel`, C's bands copied into `c`. The
    /// bands' temporaries are allocated through the set (its budgets hold) and released before
    /// it returns.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for an allocation smaller than its matrix or a zero dimension;
    /// as [`matmul_with`] on each device, [`DeviceSet::alloc_on`] and
    /// [`DeviceSet::copy_range`].
    pub fn split_matmul(
        &self,
        a: DeviceHandle,
        b: DeviceHandle,
        c: DeviceHandle,
        d: MatmulDims,
        kernel: MatmulKernel,
    ) -> Result<()> {
        let (m, n, k) = (u64::from(d.m), u64::from(d.n), u64::from(d.k));
        if m == 0 || n == 0 || k == 0 {
            return Err(Error::ShapeMismatch {
                expected: "M, N and K of at least 1".into(),
                actual: format!("{d:?}"),
            });
        }
        for (h, bytes, what) in [
            (a, 4 * m * k, "A"),
            (b, 4 * k * n, "B"),
            (c, 4 * m * n, "C"),
        ] {
            let size = self.device(h.device)?.size_of(h.handle)?;
            if size < bytes {
                return Err(Error::ShapeMismatch {
                    expected: format!("{what} of at least {bytes} bytes for {d:?}"),
                    actual: format!("{size} bytes"),
                });
            }
        }
        let parts = (self.len() as u64).min(m);
        let mut bands = Vec::new();
        let mut row0 = 0;
        let mut result = Ok(());
        for i in 0..parts {
            let rows = m / parts + u64::from(i < m % parts);
            match self.band(i as usize, a, b, row0, rows, d, kernel) {
                Ok(band) => bands.push((band, row0, rows)),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            row0 += rows;
        }
        for &(band, row0, rows) in &bands {
            if result.is_ok() {
                result = self.copy_range(band[2], 0, c, 4 * row0 * n, 4 * rows * n);
            }
        }
        for (band, _, _) in bands {
            for h in band {
                let released = self.release(h);
                if result.is_ok() {
                    result = released;
                }
            }
        }
        result
    }

    /// Band `rows` rows from `row0` of A on `device`: its A, B and C there, C recorded.
    #[allow(clippy::too_many_arguments, reason = "one band's every input, private")]
    fn band(
        &self,
        device: usize,
        a: DeviceHandle,
        b: DeviceHandle,
        row0: u64,
        rows: u64,
        d: MatmulDims,
        kernel: MatmulKernel,
    ) -> Result<[DeviceHandle; 3]> {
        let (n, k) = (u64::from(d.n), u64::from(d.k));
        let a_i = self.alloc_on(device, AllocDesc::new("split matmul A band", 4 * rows * k))?;
        let made = (|| {
            let b_i = self.alloc_on(device, AllocDesc::new("split matmul B", 4 * k * n))?;
            let c_i =
                match self.alloc_on(device, AllocDesc::new("split matmul C band", 4 * rows * n)) {
                    Ok(c_i) => c_i,
                    Err(e) => {
                        self.release(b_i)?;
                        return Err(e);
                    }
                };
            let run = || -> Result<()> {
                self.copy_range(a, 4 * row0 * k, a_i, 0, 4 * rows * k)?;
                self.copy_range(b, 0, b_i, 0, 4 * k * n)?;
                let ctx = self.device(device)?;
                let band = MatmulDims {
                    m: u32::try_from(rows).unwrap_or(u32::MAX),
                    ..d
                };
                matmul_with(ctx, a_i.handle, b_i.handle, c_i.handle, band, kernel)?;
                ctx.submit()?;
                Ok(())
            };
            match run() {
                Ok(()) => Ok((b_i, c_i)),
                Err(e) => {
                    self.release(b_i)?;
                    self.release(c_i)?;
                    Err(e)
                }
            }
        })();
        match made {
            Ok((b_i, c_i)) => Ok([a_i, b_i, c_i]),
            Err(e) => {
                self.release(a_i)?;
                Err(e)
            }
        }
    }
}
