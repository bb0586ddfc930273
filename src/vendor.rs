//! The device vendor's own code and units on the context's memory, as kernels may use them after
//! the context's debug settings: the vendor BLAS (cuBLAS on CUDA) and cooperative matrices
//! (tensor cores through wgpu). Part of [`Context::interop`](crate::Context::interop).

use crate::backend::{Backend, BlockRange, CooperativeMatrix};
use crate::interop::Interop;
use crate::types::error::{Error, Result};
use crate::{Binding, SubmissionIndex};

impl<'a, B: Backend> Interop<'a, B> {
    /// Whether [`vendor_matmul`](Self::vendor_matmul) and
    /// [`vendor_matmul_f16`](Self::vendor_matmul_f16) can run: the
    /// backend has a vendor BLAS (cuBLAS on CUDA), and
    /// [`DebugSettings::no_vendor_blas`](crate::DebugSettings::no_vendor_blas) is off.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// assert!(!ctx.interop().has_vendor_blas());
    /// ```
    pub fn has_vendor_blas(&self) -> bool {
        !self.ctx.debug.no_vendor_blas && self.ctx.backend.has_vendor_matmul()
    }

    /// The cooperative-matrix configurations kernels may use: the backend's, unless
    /// [`DebugSettings::no_cooperative_matrix`](crate::DebugSettings::no_cooperative_matrix).
    pub fn cooperative_matrices(&self) -> &'a [CooperativeMatrix] {
        if self.ctx.debug.no_cooperative_matrix {
            &[]
        } else {
            self.ctx.backend.cooperative_matrices()
        }
    }

    /// The error for an explicit request of the vendor BLAS (`what`, e.g. "vendor matmul")
    /// where [`has_vendor_blas`](Self::has_vendor_blas) is false: [`Error::Unsupported`] saying
    /// why (the debug setting, or a backend without one), then `instead`, what to do (e.g. "use
    /// MatmulKernel::Auto").
    pub fn vendor_blas_refusal(&self, what: &str, instead: &str) -> Error {
        let why = if self.ctx.debug.no_vendor_blas {
            "DebugSettings::no_vendor_blas turns the vendor BLAS off in this context"
        } else {
            "this backend has no vendor BLAS (cuBLAS)"
        };
        Error::Unsupported {
            what: what.into(),
            reason: format!("{why}; {instead}"),
        }
    }

    /// Records `C = A·B` on row-major f32 matrices with the vendor BLAS; `bindings` are `A`
    /// (`m×k`), `B` (`k×n`) and `C` (`m×n`), `dims` = `[m, n, k]`.
    ///
    /// # Errors
    /// As [`Context::dispatch`](crate::Context::dispatch) for the bindings;
    /// [`Error::ShapeMismatch`] for a zero dimension, a binding smaller than its matrix or a `C`
    /// that overlaps `A` or `B`; [`Error::InvalidParameter`] for a dimension of 2³¹ or more;
    /// the refusal of
    /// [`vendor_blas_refusal`](Self::vendor_blas_refusal) where
    /// [`has_vendor_blas`](Self::has_vendor_blas) is false.
    pub fn vendor_matmul(
        &self,
        bindings: &[Binding; 3],
        dims: [u32; 3],
    ) -> Result<SubmissionIndex> {
        self.run_vendor(bindings, dims, 4, "vendor matmul", |ranges| {
            // SAFETY: `with_ranges` resolved the ranges for binding, and `run_vendor` checked
            // that they hold the matrices `dims` describe, 4 bytes a value, and that C overlaps
            // neither A nor B.
            unsafe { self.ctx.backend.vendor_matmul(ranges, dims) }
        })
    }

    /// [`vendor_matmul`](Self::vendor_matmul) on f16 `A` and `B` (IEEE binary16, 2 bytes a value) into an
    /// f32 `C`, accumulated in f32.
    ///
    /// # Errors
    /// As [`vendor_matmul`](Self::vendor_matmul).
    pub fn vendor_matmul_f16(
        &self,
        bindings: &[Binding; 3],
        dims: [u32; 3],
    ) -> Result<SubmissionIndex> {
        self.run_vendor(bindings, dims, 2, "vendor f16 matmul", |ranges| {
            // SAFETY: `with_ranges` resolved the ranges for binding, and `run_vendor` checked
            // that they hold the matrices `dims` describe (2 bytes an f16 value in A and B, 4 in
            // C), and that C overlaps neither A nor B.
            unsafe { self.ctx.backend.vendor_matmul_f16(ranges, dims) }
        })
    }

    /// Resolves the bindings, checks them against `dims` (A and B of `elem`-byte values, C of
    /// f32) and C against A and B, then records `launch` on them.
    fn run_vendor(
        &self,
        bindings: &[Binding; 3],
        dims: [u32; 3],
        elem: u64,
        what: &str,
        launch: impl FnOnce(&[BlockRange<'_, B::Block>]) -> Result<crate::types::QueueIndex>,
    ) -> Result<SubmissionIndex> {
        if !self.has_vendor_blas() {
            return Err(self.vendor_blas_refusal(what, "use a matmul kernel instead"));
        }
        if dims.contains(&0) {
            return Err(Error::ShapeMismatch {
                expected: format!("{what} dimensions [m, n, k] of at least 1"),
                actual: format!("{dims:?}"),
            });
        }
        let [m, n, k] = dims.map(u64::from);
        let needs = [
            m.saturating_mul(k).saturating_mul(elem),
            k.saturating_mul(n).saturating_mul(elem),
            m.saturating_mul(n).saturating_mul(4),
        ];
        let index = self
            .ctx
            .with_ranges(bindings, &[false, false, true], |ranges| {
                for ((range, need), name) in ranges.iter().zip(needs).zip(["A", "B", "C"]) {
                    if range.size < need {
                        return Err(Error::ShapeMismatch {
                            expected: format!(
                                "{name} of at least {need} bytes for {what} {m}×{n}×{k}"
                            ),
                            actual: format!("a binding of {} bytes", range.size),
                        });
                    }
                }
                let overlaps = |x: &BlockRange<'_, B::Block>, y: &BlockRange<'_, B::Block>| {
                    std::ptr::eq(x.block, y.block)
                        && x.offset < y.offset.saturating_add(y.size)
                        && y.offset < x.offset.saturating_add(x.size)
                };
                if overlaps(&ranges[2], &ranges[0]) || overlaps(&ranges[2], &ranges[1]) {
                    return Err(Error::ShapeMismatch {
                        expected: format!("a C of {what} apart from A and B"),
                        actual: "a C that overlaps A or B".into(),
                    });
                }
                launch(ranges)
            })?;
        Ok(self.ctx.submission(index))
    }
}
