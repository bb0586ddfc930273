//! The context's debug settings as its kernels read them.

impl<B: crate::backend::Backend> crate::Context<B> {
    /// Whether kernels may use the backend's vendor BLAS: it has one, and
    /// [`DebugSettings::no_vendor_blas`] is off.
    pub(crate) fn vendor_blas(&self) -> bool {
        !self.debug.no_vendor_blas && self.backend.has_vendor_matmul()
    }

    /// The cooperative-matrix configurations kernels may use: the backend's, unless
    /// [`DebugSettings::no_cooperative_matrix`].
    pub(crate) fn cooperative_matrices(&self) -> &[crate::backend::CooperativeMatrix] {
        if self.debug.no_cooperative_matrix {
            &[]
        } else {
            self.backend.cooperative_matrices()
        }
    }

    /// [`Error::Unsupported`](crate::Error::Unsupported) for an explicit request of the vendor
    /// BLAS (`what`) that the context cannot serve.
    pub(crate) fn no_vendor_blas(&self, what: &str) -> crate::Error {
        crate::Error::Unsupported {
            what: what.into(),
            reason: if self.debug.no_vendor_blas {
                "DebugSettings::no_vendor_blas turns the vendor BLAS off in this context; use \
                 MatmulKernel::Auto"
                    .into()
            } else {
                "this backend has no vendor BLAS (cuBLAS); use MatmulKernel::Auto or Tiled".into()
            },
        }
    }
}
