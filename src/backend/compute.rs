//! [`Compute`]: the half of the seam that runs kernels, and [`KernelSource`].

use std::borrow::Cow;

use super::{BlockRange, Storage};
use crate::types::error::{Error, Result};
use crate::types::{CooperativeMatrix, QueueIndex};

/// Values for a kernel's `override` constants, by name. The context builds one pipeline per
/// kernel and set of values, and caches it.
pub type Constants<'a> = &'a [(&'static str, f64)];

/// What every CUDA twin starts with (see [`KernelSource::with_cuda`]): the storage binding
/// `BUF(T)`, which a safe dispatch compiles with `VRAMKIT_CHECKED` so that every index is
/// clamped into its binding, the WGSL built-ins the twins use, `float4` helpers and the flat
/// index of one-dimensional dispatches.
pub const CUDA_PRELUDE: &str = include_str!("shaders/common.cuh");

/// A compute kernel in source form: WGSL, and optionally a CUDA C twin. Backends compile it
/// once; the context caches the result.
///
/// The strings are [`Cow<'static, str>`](Cow): borrowed `&'static str`s for kernels known at
/// compile time ([`new`](Self::new) is `const`, for `const` registries like
/// `vramkit-kernels`' `shaders`), or owned `String`s for WGSL loaded or generated at run time
/// ([`owned`](Self::owned)), with nothing leaked. So it is `Clone`, not `Copy`, and `&` of a
/// `const` source is a temporary, not a `&'static` reference: keep a `static` (or the value)
/// where a reference must live on; the accessors borrow from the source.
///
/// ```
/// use vramkit::backend::KernelSource;
/// const DOUBLE: KernelSource = KernelSource::new(
///     "double",
///     "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
///      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
///          x[id.x] = 2.0 * x[id.x];
///      }",
///     "main",
/// );
/// assert_eq!(DOUBLE.label(), "double");
///
/// // WGSL made at run time (read from a file, generated): owned strings.
/// let factor = 3.0;
/// let wgsl = format!(
///     "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
///      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
///          x[id.x] = {factor:?} * x[id.x];
///      }}"
/// );
/// let triple = KernelSource::owned(format!("times {factor}"), wgsl, "main");
/// assert_eq!(triple.label(), "times 3");
/// assert!(triple.wgsl().contains("3.0 * x[id.x]"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource {
    label: Cow<'static, str>,
    wgsl: Cow<'static, str>,
    entry: Cow<'static, str>,
    cuda: Cow<'static, str>,
    /// Whether it was made [`unchecked`](Self::unchecked): only then may a backend compile it
    /// without runtime checks, for launches through
    /// [`Context::dispatch_unchecked`](crate::Context::dispatch_unchecked). Cleared by
    /// [`Context::dispatch`](crate::Context::dispatch), so params from safe code always meet
    /// the checks.
    guarded: bool,
}

impl KernelSource {
    /// A WGSL kernel from static strings: `label` names it in caches and errors, `entry` is
    /// its entry point. Every access to a binding is bounds-checked on the device (WGSL's
    /// runtime checks), whatever the params. `const`, for kernel registries.
    pub const fn new(label: &'static str, wgsl: &'static str, entry: &'static str) -> Self {
        Self {
            label: Cow::Borrowed(label),
            wgsl: Cow::Borrowed(wgsl),
            entry: Cow::Borrowed(entry),
            cuda: Cow::Borrowed(""),
            guarded: false,
        }
    }

    /// A WGSL kernel from owned or borrowed strings, e.g. WGSL read from a file or generated
    /// at run time: as [`new`](Self::new), with nothing leaked. Compiled with runtime bounds
    /// checks unless made [`unchecked`](Self::unchecked).
    ///
    /// The context caches pipelines by label and entry point, and checks on a cache hit that
    /// the source is the one the pipeline was built from: a new source under an old label (a
    /// shader reloaded while the program runs) is compiled again, never confused with the
    /// old one.
    pub fn owned(
        label: impl Into<Cow<'static, str>>,
        wgsl: impl Into<Cow<'static, str>>,
        entry: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            label: label.into(),
            wgsl: wgsl.into(),
            entry: entry.into(),
            cuda: Cow::Borrowed(""),
            guarded: false,
        }
    }

    /// Adds the CUDA C twin the CUDA backend runs: an `extern "C" __global__` function named
    /// as the WGSL entry point, whose block size is the WGSL workgroup size. It takes each
    /// storage binding, in binding order, as `BUF(T)` (from [`CUDA_PRELUDE`], which the CUDA
    /// backend does not add: start the source with it),
    /// then the params struct by value. `const`; a twin made at run time goes in with
    /// [`with_cuda_owned`](Self::with_cuda_owned).
    ///
    /// The CUDA backend compiles the twin with `VRAMKIT_ENTRY_<entry>` defined (the entry
    /// point's name), so a source holding several kernels can compile only the one asked for
    /// by wrapping each in `#ifdef VRAMKIT_ENTRY_<name>`: NVRTC and the driver then translate
    /// one function instead of all of them.
    ///
    /// # Safety
    /// 1. The source starts with [`CUDA_PRELUDE`] (or the same `BUF` definition).
    /// 2. The function declares every storage binding as `BUF(T)` and reaches device memory
    ///    only by indexing those bindings (no raw pointers taken from them, no other global
    ///    memory but its own `__device__` variables): compiled with `VRAMKIT_CHECKED`, as a
    ///    safe dispatch compiles it, `BUF` then clamps every index into its binding.
    pub const unsafe fn with_cuda(mut self, cuda: &'static str) -> Self {
        let old = std::mem::replace(&mut self.cuda, Cow::Borrowed(cuda));
        // A `const fn` cannot run `String`'s destructor: an owned twin that this replaces (set
        // by `with_cuda_owned`, then replaced here) is leaked, never freed twice. Borrowed
        // ones, the only kind `new` and `owned` start with, own nothing.
        std::mem::forget(old);
        self
    }

    /// [`with_cuda`](Self::with_cuda) for a CUDA C twin loaded or generated at run time.
    ///
    /// # Safety
    /// As [`with_cuda`](Self::with_cuda).
    pub unsafe fn with_cuda_owned(mut self, cuda: impl Into<Cow<'static, str>>) -> Self {
        self.cuda = cuda.into();
        self
    }

    /// This kernel without runtime checks: backends compile it without bounds checks on its
    /// bindings, loop bounding or zero-initialised workgroup memory, for launches through
    /// [`Context::dispatch_unchecked`](crate::Context::dispatch_unchecked), whose caller has
    /// validated the params against the bound sizes (vramkit's typed kernel functions do so).
    /// [`Context::dispatch`](crate::Context::dispatch) and the other safe launches still
    /// compile it with the checks.
    ///
    /// # Safety
    /// 1. Every workgroup-memory location an invocation reads was written before, by an
    ///    invocation of the same workgroup, ordered before the read by a `workgroupBarrier`
    ///    (`__syncthreads` in the CUDA twin): workgroup memory is not zeroed.
    /// 2. The CUDA twin, if any, is as [`with_cuda`](Self::with_cuda) requires.
    /// 3. If the WGSL enables `wgpu_cooperative_matrix` (wgpu's experimental cooperative
    ///    matrices, which runtime checks would not cover anyway): it uses only configurations
    ///    the adapter lists ([`Compute::cooperative_matrices`]) and assumes subgroups of
    ///    exactly 32, every cooperative operation is in uniform control flow, and its
    ///    workgroup-memory pointers are 16-byte aligned with strides of multiples of 16 bytes.
    ///    Launches must also keep every tile inside the bindings (see
    ///    [`Context::dispatch_unchecked`](crate::Context::dispatch_unchecked)).
    pub const unsafe fn unchecked(mut self) -> Self {
        self.guarded = true;
        self
    }

    /// This kernel as a caller's launch compiles it: with runtime bounds checks (a copy only
    /// when it was made unchecked, whose static strings it shares).
    pub(crate) fn as_checked(&self) -> Cow<'_, KernelSource> {
        if self.guarded {
            Cow::Owned(self.clone().checked())
        } else {
            Cow::Borrowed(self)
        }
    }

    /// The same kernel, compiled with runtime bounds checks.
    pub(crate) const fn checked(mut self) -> Self {
        self.guarded = false;
        self
    }

    /// Its name: with the entry point, the key of the context's pipeline cache; in error
    /// messages.
    pub const fn label(&self) -> &str {
        as_str(&self.label)
    }

    /// The WGSL source.
    pub const fn wgsl(&self) -> &str {
        as_str(&self.wgsl)
    }

    /// The entry point: the WGSL function, and the `extern "C"` function of the CUDA twin.
    pub const fn entry(&self) -> &str {
        as_str(&self.entry)
    }

    /// The CUDA C twin; empty where there is none.
    pub const fn cuda(&self) -> &str {
        as_str(&self.cuda)
    }

    /// Whether a backend may compile this kernel without runtime bounds checks: made with
    /// [`unchecked`](Self::unchecked) and launched through
    /// [`Context::dispatch_unchecked`](crate::Context::dispatch_unchecked).
    pub const fn is_unchecked(&self) -> bool {
        self.guarded
    }

    /// The label and entry point as the context's pipeline cache keys them (no copy for
    /// borrowed strings).
    pub(crate) fn cache_names(&self) -> (Cow<'static, str>, Cow<'static, str>) {
        (self.label.clone(), self.entry.clone())
    }

    /// Whether `other` has the same WGSL and CUDA sources: a cached pipeline built from one
    /// serves the other. Cheap for the same static strings (same address and length).
    pub(crate) fn same_code(&self, other: &KernelSource) -> bool {
        let same = |a: &str, b: &str| (a.as_ptr() == b.as_ptr() && a.len() == b.len()) || a == b;
        same(&self.wgsl, &other.wgsl) && same(&self.cuda, &other.cuda)
    }
}

/// A `Cow`'s text, in a `const fn` (`Deref` is not `const`).
#[allow(
    clippy::ptr_arg,
    reason = "a `&str` argument would need the `Deref` this function stands in for"
)]
const fn as_str<'a>(s: &'a Cow<'static, str>) -> &'a str {
    match s {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => s.as_str(),
    }
}

/// Compiling and launching kernels over ranges of [`Storage`] blocks, and a vendor BLAS.
///
/// # Safety
/// Implementations promise:
/// 1. A kernel compiled from a source that is not [unchecked](KernelSource::is_unchecked) reaches
///    memory only inside the ranges bound to it, whatever its params (runtime bounds checks).
/// 2. Launches are recorded like [`Storage`]'s copies: in recording order, under the same
///    submission indices.
pub unsafe trait Compute: Storage {
    /// A compiled kernel.
    type Kernel: Send + Sync + 'static;

    /// Compiles a kernel with values for its `override` constants: without runtime bounds
    /// checks where the source is [unchecked](KernelSource::is_unchecked), with them otherwise.
    fn compile(&self, source: &KernelSource, constants: Constants<'_>) -> Result<Self::Kernel>;

    /// Records a kernel launch: `bindings` are storage buffers `0..n` of group 0, `params` (if
    /// not empty) a uniform buffer at binding `n`.
    ///
    /// # Safety
    /// 1. Every range lies inside its block; its offset is a multiple of
    ///    [`BackendLimits::offset_alignment`](super::BackendLimits::offset_alignment), its size
    ///    a non-zero multiple of 4 of at most
    ///    [`BackendLimits::max_binding_size`](super::BackendLimits::max_binding_size).
    /// 2. If `kernel` was compiled from an [unchecked](KernelSource::is_unchecked) source, the
    ///    launch meets every item of
    ///    [`Context::dispatch_unchecked`](crate::Context::dispatch_unchecked)'s `# Safety`
    ///    (accesses inside the bound ranges, indices in range, no integer division by zero or
    ///    overflow, loops that end).
    /// 3. There is one range per storage binding of the entry point, each holding at least one
    ///    element; `params` is as long as its params struct (or that rounded up to 16 bytes),
    ///    at most [`BackendLimits::max_params_size`](super::BackendLimits::max_params_size);
    ///    `workgroups` are within
    ///    [`BackendLimits::max_workgroups`](super::BackendLimits::max_workgroups).
    unsafe fn dispatch(
        &self,
        kernel: &Self::Kernel,
        bindings: &[BlockRange<'_, Self::Block>],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<QueueIndex>;

    /// Whether [`vendor_matmul`](Compute::vendor_matmul) is available (cuBLAS on CUDA).
    fn has_vendor_matmul(&self) -> bool {
        false
    }

    /// Records `C = A·B` on row-major f32 matrices (`dims` = `[m, n, k]`) with the vendor's
    /// BLAS. The bindings are `A`, `B`, `C`.
    ///
    /// # Safety
    /// 1. The ranges satisfy [`dispatch`](Compute::dispatch)'s first condition.
    /// 2. `A` holds at least `m·k` f32 values, `B` `k·n` and `C` `m·n`.
    /// 3. `C` overlaps neither `A` nor `B`.
    unsafe fn vendor_matmul(
        &self,
        _bindings: &[BlockRange<'_, Self::Block>],
        _dims: [u32; 3],
    ) -> Result<QueueIndex> {
        Err(Error::Unsupported {
            what: "vendor matmul".into(),
            reason: "this backend has no vendor BLAS; use MatmulKernel::Auto or Tiled".into(),
        })
    }

    /// Records `C = A·B` with the vendor's BLAS on row-major matrices whose `A` and `B` hold
    /// IEEE binary16 values (`dims` = `[m, n, k]`), accumulated in f32 into an f32 `C`. The
    /// bindings are `A`, `B`, `C`.
    ///
    /// # Safety
    /// As [`vendor_matmul`](Compute::vendor_matmul), with `A` holding at least `m·k` f16
    /// values and `B` `k·n` (2 bytes each), `C` `m·n` f32 values.
    unsafe fn vendor_matmul_f16(
        &self,
        _bindings: &[BlockRange<'_, Self::Block>],
        _dims: [u32; 3],
    ) -> Result<QueueIndex> {
        Err(Error::Unsupported {
            what: "vendor f16 matmul".into(),
            reason: "this backend has no vendor BLAS; use MatmulKernel::Auto or Tiled".into(),
        })
    }

    /// The cooperative-matrix (tensor core) configurations the device was opened with for
    /// kernels to use (the wgpu backend lists those of the adapter it enabled; none elsewhere).
    /// Kernels that use them (the f16 matmul's cooperative variant) run only when a matching
    /// one is listed.
    fn cooperative_matrices(&self) -> &[CooperativeMatrix] {
        &[]
    }

    /// Records a kernel launch whose bindings include textures: `bindings[i]` is binding `i`
    /// of group 0 (a buffer range, a texture's mip level bound as the entry point declares it,
    /// sampled or stored, or a linear clamp-to-edge sampler), `params` (if not empty) a
    /// uniform at binding `bindings.len()`. Backends whose kernels cannot bind textures refuse
    /// with [`Error::Unsupported`] (the default).
    ///
    /// # Safety
    /// 1. Buffer ranges satisfy [`dispatch`](Compute::dispatch)'s first condition; each mip
    ///    level exists.
    /// 2. `kernel` was compiled with bounds checks (not [unchecked](KernelSource::is_unchecked)).
    /// 3. The bindings match the entry point's kinds one for one (a stored texture's format and
    ///    usage included; a stored texture is bound nowhere else in the launch), and `params`
    ///    and `workgroups` satisfy [`dispatch`](Compute::dispatch)'s third condition.
    unsafe fn dispatch_textures(
        &self,
        _kernel: &Self::Kernel,
        _bindings: &[KernelBinding<'_, Self::Block, Self::Texture>],
        _params: &[u8],
        _workgroups: [u32; 3],
    ) -> Result<QueueIndex> {
        Err(Error::Unsupported {
            what: "kernels that bind textures".into(),
            reason: "this backend's kernels read textures as pitched memory, not as images \
                     (CUDA, host); bind buffers, or use the wgpu backend"
                .into(),
        })
    }
}

/// One binding of a launch that may bind textures
/// ([`Compute::dispatch_textures`]).
#[derive(Debug)]
pub enum KernelBinding<'a, Blk, Tex> {
    /// A range of a block, as a storage buffer.
    Buffer(BlockRange<'a, Blk>),
    /// One mip level of a texture, sampled (`texture_2d<f32>`) or stored
    /// (`texture_storage_2d`), as the entry point declares.
    Texture {
        /// The texture.
        texture: &'a Tex,
        /// The mip level.
        mip: u32,
    },
    /// A sampler with linear filtering and clamp-to-edge addressing.
    Sampler,
}
