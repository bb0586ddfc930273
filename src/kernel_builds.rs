//! Several kernels built at once: a launch builds its kernel when it first meets it, so code that
//! records kernels one after another (a blur's two passes with a buffer intermediate) pays the
//! sum of their builds on a cold driver (NVRTC and the driver's compile, tenths of a second
//! each). Built together, it pays the slowest.

use crate::backend::{Backend, Constants, KernelSource};
use crate::types::error::{Error, Result};
use crate::Context;

impl<B: Backend> Context<B> {
    /// Builds the pipelines of `kernels` (each with its override constants) that this context
    /// has not built yet and is not building, at the same time: the first on the calling
    /// thread, each other on a thread of its own (or on the calling thread where none can be
    /// started). Kernels built already cost a cache lookup each, so this may be called before
    /// every launch of a group of kernels. Pass each source as its launch will: an
    /// [`unchecked`](KernelSource::unchecked) one is built for
    /// [`dispatch_unchecked`](Self::dispatch_unchecked), any other for
    /// [`dispatch`](Self::dispatch) and [`dispatch_unchecked`](Self::dispatch_unchecked);
    /// those launches then find it in the cache.
    ///
    /// ```
    /// use vramkit::backend::{Backend, KernelSource};
    ///
    /// const WGSL: &str = "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
    /// @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) {
    ///     x[i.x] *= 2.0;
    /// }";
    ///
    /// /// Builds both kernels at once, before a loop launches them.
    /// fn warm<B: Backend>(ctx: &vramkit::Context<B>) -> vramkit::Result<()> {
    ///     let double = KernelSource::new("double", WGSL, "main");
    ///     let half = KernelSource::owned("half", WGSL.replace("2.0", "0.5"), "main");
    ///     ctx.build_kernels(&[(&double, &[]), (&half, &[])])
    /// }
    /// ```
    ///
    /// # Errors
    /// The error of the first kernel in `kernels` that did not build
    /// ([`Error::Shader`](crate::Error::Shader) and the like, as a launch of it would return);
    /// the other kernels are built all the same. A kernel another thread is building is not
    /// waited for: its error, if any, comes to that thread and to the launches that need it.
    /// [`Error::Internal`] where a build panicked (a bug of vramkit or the driver).
    pub fn build_kernels(&self, kernels: &[(&KernelSource, Constants<'_>)]) -> Result<()> {
        let missing: Vec<_> = kernels
            .iter()
            .filter(|(source, constants)| !self.kernel_built(source, constants))
            .collect();
        let build = |&&(source, constants): &&(&KernelSource, Constants<'_>)| {
            self.kernel(source, constants).map(drop)
        };
        let Some((first, rest)) = missing.split_first() else {
            return Ok(());
        };
        std::thread::scope(|s| {
            let others: Vec<_> = rest
                .iter()
                .map(|k| {
                    std::thread::Builder::new()
                        .name("vramkit-build".into())
                        .spawn_scoped(s, move || build(k))
                        .map_err(|_| k)
                })
                .collect();
            let mut result = build(first);
            for other in others {
                let built = match other {
                    Ok(thread) => thread.join().unwrap_or_else(|_| {
                        Err(Error::Internal {
                            message: "a kernel build panicked".into(),
                        })
                    }),
                    Err(k) => build(k),
                };
                result = result.and(built);
            }
            result
        })
    }
}
