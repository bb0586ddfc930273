//! [`DebugSettings`]: what a context records and logs for debugging, and which optional fast
//! paths it leaves off. They travel in [`ContextDesc::debug`](crate::ContextDesc::debug), as
//! gpu-allocator's `AllocatorDebugSettings` travel in its create descriptor: the library reads
//! no environment variable of its own, except the adapter choice of
//! [`WgpuBackend::new`](crate::backend::wgpu::WgpuBackend::new) (`WGPU_BACKEND`,
//! `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`, as `wgpu::util` reads them). Apps that want the
//! environment to decide call [`DebugSettings::from_env`].

/// Debugging aids and opt-outs of a context (all off by default).
///
/// The first two act in the memory manager, whatever the backend. The opt-outs act in the
/// context's kernels whatever the backend, and also where the context creates its backend
/// ([`Context::new`](crate::Context::new), `Context::cuda`), which is then set up never to
/// load the vendor BLAS or open the device with the experimental feature. A backend built apart
/// for [`Context::with_backend`](crate::Context::with_backend) takes that part from its own
/// config ([`WgpuConfig`](crate::backend::wgpu::WgpuConfig), `CudaConfig`).
///
/// ```
/// use vramkit::{ContextDesc, DebugSettings};
/// let desc = ContextDesc {
///     debug: DebugSettings { backtraces: true, ..Default::default() },
///     ..Default::default()
/// };
/// let ctx = vramkit::Context::host(desc);
/// let h = ctx.alloc(vramkit::AllocDesc::new("kept", 64))?;
/// assert!(ctx.observe().leaks()[0].allocated_at.is_some());
/// # ctx.release(h)?;
/// # Ok::<(), vramkit::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DebugSettings {
    /// Capture a backtrace at each allocation (buffers and textures), shown by
    /// [`Observe::leaks`](crate::observe::Observe::leaks) and in the leak report the context logs when
    /// it is dropped. Costs microseconds per allocation.
    pub backtraces: bool,
    /// Log each allocation and release of buffers and textures (label, bytes, kind, place,
    /// bytes in use after it) at `info` level. Off, the same lines go to `trace`.
    pub log_allocations: bool,
    /// Never use the vendor's BLAS (cuBLAS on CUDA): `MatmulKernel::Auto` picks vramkit's own
    /// kernels, `MatmulKernel::Vendor` is [`Error::Unsupported`](crate::Error::Unsupported),
    /// and `Context::cuda` does not load cuBLAS. No effect where there is none (wgpu, host).
    pub no_vendor_blas: bool,
    /// Never use cooperative matrices (tensor cores): the f16 matmul runs its tiled kernel, and
    /// [`Context::new`](crate::Context::new) opens the device without wgpu's
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`, so code that builds its own pipelines on
    /// [`WgpuBackend::device`](crate::backend::wgpu::WgpuBackend::device) gets a device with no
    /// experimental feature. No effect where the adapter has none (lavapipe, CUDA).
    pub no_cooperative_matrix: bool,
}

impl DebugSettings {
    /// Each setting on where `self` or `other` has it on: e.g. a description's settings with
    /// what the environment asks for added (`desc.debug.or(DebugSettings::from_env())`).
    ///
    /// ```
    /// use vramkit::DebugSettings;
    /// let a = DebugSettings { backtraces: true, ..Default::default() };
    /// let b = DebugSettings { no_vendor_blas: true, ..Default::default() };
    /// let both = a.or(b);
    /// assert!(both.backtraces && both.no_vendor_blas && !both.log_allocations);
    /// ```
    #[must_use]
    pub fn or(self, other: DebugSettings) -> DebugSettings {
        DebugSettings {
            backtraces: self.backtraces || other.backtraces,
            log_allocations: self.log_allocations || other.log_allocations,
            no_vendor_blas: self.no_vendor_blas || other.no_vendor_blas,
            no_cooperative_matrix: self.no_cooperative_matrix || other.no_cooperative_matrix,
        }
    }

    /// The settings the environment asks for, for apps and examples that want them there (the
    /// library never calls it). Each variable is on when set to `1`:
    ///
    /// | variable | field |
    /// |---|---|
    /// | `VRAMKIT_BACKTRACE` | [`backtraces`](Self::backtraces) |
    /// | `VRAMKIT_LOG_ALLOCATIONS` | [`log_allocations`](Self::log_allocations) |
    /// | `VRAMKIT_NO_VENDOR_BLAS`, or `VRAMKIT_CUDA_NO_CUBLAS` | [`no_vendor_blas`](Self::no_vendor_blas) |
    /// | `VRAMKIT_NO_COOPERATIVE_MATRIX` | [`no_cooperative_matrix`](Self::no_cooperative_matrix) |
    ///
    /// ```
    /// let desc = vramkit::ContextDesc {
    ///     debug: vramkit::DebugSettings::from_env(),
    ///     ..Default::default()
    /// };
    /// # let _ = desc;
    /// ```
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).is_ok_and(|v| v == "1"))
    }

    /// The settings of the variables `on` says are set to `1`.
    fn from_vars(on: impl Fn(&str) -> bool) -> Self {
        Self {
            backtraces: on("VRAMKIT_BACKTRACE"),
            log_allocations: on("VRAMKIT_LOG_ALLOCATIONS"),
            no_vendor_blas: on("VRAMKIT_NO_VENDOR_BLAS") || on("VRAMKIT_CUDA_NO_CUBLAS"),
            no_cooperative_matrix: on("VRAMKIT_NO_COOPERATIVE_MATRIX"),
        }
    }

    /// The level allocation and release lines are logged at.
    pub(crate) fn allocation_level(&self) -> log::Level {
        if self.log_allocations {
            log::Level::Info
        } else {
            log::Level::Trace
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DebugSettings;

    /// The settings for an environment with exactly `set` at `1`.
    fn with(set: &[&str]) -> DebugSettings {
        DebugSettings::from_vars(|name| set.contains(&name))
    }

    #[test]
    fn each_variable_sets_its_field() {
        assert_eq!(with(&[]), DebugSettings::default());
        let one = |f: fn(&mut DebugSettings)| {
            let mut d = DebugSettings::default();
            f(&mut d);
            d
        };
        assert_eq!(with(&["VRAMKIT_BACKTRACE"]), one(|d| d.backtraces = true));
        assert_eq!(
            with(&["VRAMKIT_LOG_ALLOCATIONS"]),
            one(|d| d.log_allocations = true)
        );
        for v in ["VRAMKIT_NO_VENDOR_BLAS", "VRAMKIT_CUDA_NO_CUBLAS"] {
            assert_eq!(with(&[v]), one(|d| d.no_vendor_blas = true), "{v}");
        }
        assert_eq!(
            with(&["VRAMKIT_NO_COOPERATIVE_MATRIX"]),
            one(|d| d.no_cooperative_matrix = true)
        );
        assert_eq!(
            with(&[
                "VRAMKIT_BACKTRACE",
                "VRAMKIT_LOG_ALLOCATIONS",
                "VRAMKIT_NO_VENDOR_BLAS",
                "VRAMKIT_NO_COOPERATIVE_MATRIX",
            ]),
            DebugSettings {
                backtraces: true,
                log_allocations: true,
                no_vendor_blas: true,
                no_cooperative_matrix: true,
            }
        );
    }
}
