//! `C = A·B` on f32 matrices, row-major.
//!
//! Kernels, picked by [`MatmulKernel::Auto`] per backend and adapter: cuBLAS where the backend
//! has it, the register kernel on CPU adapters (no workgroup memory: on llvmpipe it is ordinary
//! memory plus barriers), else the tiled kernel (shaders/matmul_tiled.wgsl and its CUDA twin
//! shaders/cuda/matmul_tiled.cu, one algorithm):
//!
//! - A workgroup of 16×16 invocations computes a 128×128 tile of C, each invocation 8×8 values
//!   in 16 vec4 registers: 64 FMAs per 4 vec4 reads of workgroup memory per k, enough
//!   arithmetic per byte to run near the FMA rate, in a budget of 128 registers (CUDA:
//!   `__launch_bounds__(256, 2)`), so two workgroups fit a streaming multiprocessor. The invocation's rows are 4·ty.. and 64+4·ty..,
//!   its columns 4·tx.. and 64+4·tx..: the invocations of a warp read consecutive vec4 of the B
//!   tile (no bank conflicts) and share the A values (broadcast).
//! - Per step of `BK` along K ([`TiledConfig::bk`], 8 or 16; an override constant in WGSL, a
//!   `-D` define in CUDA) the workgroup stages a BK×128 slice of A, transposed (a row of A
//!   becomes a column, read as vec4 along M; the vec4 columns XOR-swizzled per k so a warp's
//!   transposing stores hit 32 different banks, without padding) and a BK×128 slice of B. The
//!   tiles are double buffered: the next step's global values are loaded into registers before
//!   the current tiles are multiplied and stored into the other buffer after, with one barrier
//!   per step. Workgroup memory: 16 KiB for BK 8 (WebGPU's minimum limit), 32 KiB for BK 16
//!   (the array sizes are override expressions of BK).
//! - Global loads are chunks of 4 consecutive values (of one row of A, of one row of B). When N
//!   and K are multiples of 4 (and [`TiledConfig::vec4`]), the bindings are `vec4<f32>` arrays
//!   (shaders/matmul_tiled_vec4.wgsl): one 16-byte load per chunk and one guard, since a chunk
//!   is then wholly inside or past every end. Otherwise they are `f32` arrays
//!   (matmul_tiled_scalar.wgsl), 4 guarded scalar loads per chunk: any N and K, at ~1.5 % of a
//!   step's 1,024 FMAs per invocation. Every load is guarded (0 past M, N or the K slice),
//!   every store checks M and N: the kernel runs without runtime bounds checks, so the bounds
//!   are its own, for any dims.
//! - The products are explicit `fma`, the accumulators are indexed by constants only (the
//!   products and stores are written out) and the WGSL module has an override constant. These
//!   guard against a 10× regression an earlier tiled kernel showed on the H200 (24.7 TFLOP/s
//!   at 4096³ through Vulkan, then 2.3 once a read-add-write branch went inside its 8×2×4
//!   store loops): wgpu-hal builds a module without overrides when it is created, honouring
//!   only the `bounds_checks` part of `ShaderRuntimeChecks::unchecked()`, so naga forces a
//!   counter and an exit into each of its loops (its SPIR-V: 9 loops, 659 → 809
//!   instructions), and with those bounded loops and the larger body the driver no longer
//!   unrolled the store loops, which index the accumulator array by the loop counters (the
//!   likely mechanism: the array then lives in local memory for the whole kernel).
//!   The wgpu backend now gives every unchecked module an override constant
//!   (vramkit's `backend/wgpu/kernel.rs`), so no kernel of this crate gets those bounds.
//!
//! - The k loop of a step: a loop over BK calling `mac` (one k: 4 vec4 reads, 64 FMAs, the
//!   16 accumulators a struct passed by value, fields named by constants), or with
//!   [`TiledConfig::unroll`] (override `UNROLL`) 8 or 16 calls written out, every
//!   workgroup-memory index a base plus a constant, as the CUDA twin's `#pragma unroll` gives
//!   it. Measured on the H200 (BENCHMARKS.md): unrolling by hand is slower through Vulkan (25.7
//!   against 30.2 TFLOP/s at BK 8), so the driver's own loop stays the default and the gap to
//!   the CUDA twin (42.0) lies elsewhere; left to look at: `read`-only A and B bindings
//!   (the backend binds everything `read_write`), the workgroup shape, 8×16 register tiles.
//!
//! Tiles per adapter: [`TiledConfig::default`] (BK 8, vec4 where N and K allow: best on the
//! H200 through Vulkan and CUDA) on every GPU;
//! `benches/matmul.rs` sweeps the others (`VRAMKIT_MATMUL_VARIANTS`).
//!
//! Large matrices: A and C are bound in bands of rows when they pass the binding limit, and K
//! is cut into launches of `K_SLICE` = 32,768 (llvmpipe cuts loops of more than 65,535 iterations
//! short), each adding to C.

use crate::shaders;
use vramkit::backend::Backend;
use vramkit::SubmissionIndex;
use vramkit::{Binding, BufferHandle, Context};
use vramkit::{Error, Result};

use super::matmul_plan::{bands, check_operands, last_launch};

/// Matrix sizes: `A` is `m×k`, `B` is `k×n`, `C` is `m×n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulDims {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
}

/// Which matmul kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MatmulKernel {
    /// Chosen per backend: [`Vendor`](Self::Vendor) where the backend has a vendor BLAS
    /// (cuBLAS on CUDA), [`Register`](Self::Register) on CPU adapters, else
    /// [`Tiled`](Self::Tiled).
    #[default]
    Auto,
    /// The vendor's BLAS: cuBLAS (strict FP32) on CUDA; [`Error::Unsupported`] elsewhere.
    Vendor,
    /// No workgroup memory, 8×8 per invocation: best on lavapipe.
    Register,
    /// 128×128 tiles in workgroup memory, 8×8 per invocation, with the adapter's
    /// [`TiledConfig`]: best on GPUs.
    Tiled,
    /// [`Tiled`](Self::Tiled) with the given configuration (for sweeps).
    TiledWith(TiledConfig),
    /// Cooperative matrices (tensor cores), for [`MatmulDtype::F16`](super::MatmulDtype) on
    /// adapters that list 16×16×16 f16→f32 ones; [`Error::Unsupported`] for f32 and elsewhere.
    Cooperative,
    /// [`Cooperative`](Self::Cooperative) with the given block shape (for sweeps).
    CooperativeWith(super::CoopTile),
}

/// Tile choices of the [`Tiled`](MatmulKernel::Tiled) kernel, override constants of one module
/// (`-D` defines of its CUDA twin): one build per configuration, cached. The default, BK = 8
/// with vec4 loads, measured best on the H200 at 4096³ (BENCHMARKS.md): 31.0 TFLOP/s through
/// Vulkan (BK 16: 20.7) and 41.8 in the CUDA twin (BK 16: 40.9; cuBLAS 50.4).
///
/// ```
/// use vramkit_kernels::TiledConfig;
/// assert_eq!(
///     TiledConfig::default(),
///     TiledConfig { bk: 8, vec4: true, unroll: false }
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledConfig {
    /// K per step (per pair of tiles staged in workgroup memory): 8 or 16.
    pub bk: u32,
    /// Load and store vec4 where N and K are multiples of 4 (else 4 scalars per vec4).
    pub vec4: bool,
    /// WGSL: the k loop of a step written out (the override `UNROLL`: 8 or 16 calls of the
    /// step's multiply-add with constant k, so every workgroup-memory index is a base plus a
    /// constant) instead of a loop left to the driver. The CUDA twin always unrolls it
    /// (`#pragma unroll`); through Vulkan on the H200 the written-out loop is slower (25.7
    /// against 30.2 TFLOP/s), so it is off by default.
    pub unroll: bool,
}

impl Default for TiledConfig {
    fn default() -> Self {
        Self {
            bk: 8,
            vec4: true,
            unroll: false,
        }
    }
}

/// Params of the matmul family, one launch: the twin of `MatmulParams` in
/// shaders/params/matmul.wgsl and shaders/cuda/params/matmul.cuh (a unit test checks the
/// layouts against naga's).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct MatmulParams {
    /// Rows of A and C in this band.
    m: u32,
    /// Columns of B and C.
    n: u32,
    /// Columns of A, rows of B.
    k: u32,
    /// This launch covers `k0 .. min(k0 + K_SLICE, k)` and adds to C unless `k0` is 0.
    k0: u32,
}

/// K per launch of vramkit's kernels (`K_SLICE` in their WGSL and CUDA sources).
const K_SLICE: u32 = 32768;

#[cfg(any(test, feature = "reference"))]
/// The CPU twin of [`matmul`], accumulating in f64 (so it is also the reference the tests
/// compare against).
///
/// ```
/// use vramkit_kernels::{matmul_cpu, MatmulDims};
/// let c = matmul_cpu(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], MatmulDims { m: 2, n: 2, k: 2 });
/// assert_eq!(c, vec![19.0, 22.0, 43.0, 50.0]);
/// ```
pub fn matmul_cpu(a: &[f32], b: &[f32], d: MatmulDims) -> Vec<f32> {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let mut c = vec![0f32; m * n];
    let mut row = vec![0f64; n];
    for i in 0..m {
        row.fill(0.0);
        for p in 0..k {
            let x = f64::from(a[i * k + p]);
            for (r, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *r += x * f64::from(y);
            }
        }
        for (out, &r) in c[i * n..(i + 1) * n].iter_mut().zip(&row) {
            *out = r as f32;
        }
    }
    c
}

/// Records `C = A·B`. The kernel variant is chosen per adapter: without workgroup memory on CPU
/// adapters (lavapipe), 128×128 tiles in workgroup memory on GPUs. When A or C is larger than one
/// binding may be, they are processed in bands of rows; B must fit one binding.
///
/// # Errors
/// [`Error::ShapeMismatch`] for a zero dimension or a buffer smaller than its matrix;
/// [`Error::InvalidParameter`] if C is A or B (matmul does not run in place);
/// [`Error::TooLarge`] if B passes the device's binding limit; the errors of
/// [`Context::dispatch_with`].
///
/// ```no_run
/// use vramkit_kernels::{matmul, MatmulDims};
/// use vramkit::{AllocDesc, Context};
/// let ctx = Context::new(Default::default())?;
/// let a = ctx.alloc(AllocDesc::new("a", 16))?;
/// let b = ctx.alloc(AllocDesc::new("b", 16))?;
/// let c = ctx.alloc(AllocDesc::new("c", 16))?;
/// ctx.upload(a, bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0]))?;
/// ctx.upload(b, bytemuck::cast_slice(&[5.0f32, 6.0, 7.0, 8.0]))?;
/// matmul(&ctx, a, b, c, MatmulDims { m: 2, n: 2, k: 2 })?;
/// assert_eq!(ctx.download(c)?, bytemuck::cast_slice::<f32, u8>(&[19.0, 22.0, 43.0, 50.0]));
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn matmul<B: Backend>(
    ctx: &Context<B>,
    a: BufferHandle,
    b: BufferHandle,
    c: BufferHandle,
    d: MatmulDims,
) -> Result<SubmissionIndex> {
    matmul_with(ctx, a, b, c, d, MatmulKernel::Auto)
}

/// [`matmul`] with the kernel variant named.
///
/// # Errors
/// As [`matmul`].
pub fn matmul_with<B: Backend>(
    ctx: &Context<B>,
    a: BufferHandle,
    b: BufferHandle,
    c: BufferHandle,
    d: MatmulDims,
    kernel: MatmulKernel,
) -> Result<SubmissionIndex> {
    check_operands(ctx, [a, b, c], d, 4)?;
    let max = ctx.backend().limits().max_binding_size;
    let band = bands(d, 4, max)?.rows;
    let (m, n, k) = (u64::from(d.m), u64::from(d.n), u64::from(d.k));
    let kernel = match kernel {
        MatmulKernel::Auto if ctx.interop().has_vendor_blas() => MatmulKernel::Vendor,
        MatmulKernel::Vendor if !ctx.interop().has_vendor_blas() => {
            return Err(ctx
                .interop()
                .vendor_blas_refusal("vendor matmul", "use MatmulKernel::Auto or Tiled"))
        }
        MatmulKernel::Auto if ctx.adapter_info().device_type == "cpu" => MatmulKernel::Register,
        MatmulKernel::Auto | MatmulKernel::Tiled => MatmulKernel::TiledWith(TiledConfig::default()),
        MatmulKernel::Cooperative | MatmulKernel::CooperativeWith(_) => {
            return Err(Error::Unsupported {
                what: "cooperative-matrix matmul on f32".into(),
                reason: "the cooperative kernel multiplies f16 matrices: use matmul_typed \
                         with MatmulDtype::F16, or another kernel for f32"
                    .into(),
            })
        }
        other => other,
    };
    if let MatmulKernel::TiledWith(TiledConfig { bk, .. }) = kernel {
        if bk != 8 && bk != 16 {
            return Err(Error::InvalidParameter {
                name: "TiledConfig::bk",
                value: bk.to_string(),
                reason: "the tiled kernel stages 8 or 16 values of K per step",
            });
        }
    }
    let mut last = None;
    let mut r0 = 0;
    while r0 < m {
        let rows = band.min(m - r0);
        let bindings = [
            Binding::range(a, r0 * k * 4, (rows * k * 4).next_multiple_of(4)),
            Binding::range(b, 0, k * n * 4),
            Binding::range(c, r0 * n * 4, rows * n * 4),
        ];
        // The sizes were checked against the buffers and the bands against the binding limit
        // (so every index the kernels compute stays below 2³⁰), and C is neither A nor B.
        if kernel == MatmulKernel::Vendor {
            last = Some(
                ctx.interop()
                    .vendor_matmul(&bindings, [rows as u32, d.n, d.k])?,
            );
            r0 += rows;
            continue;
        }
        // K in slices, each launch adding to C: llvmpipe cuts loops of more than 65,535
        // iterations short, which gave wrong sums past K = 65,535 on lavapipe.
        for k0 in (0..d.k).step_by(K_SLICE as usize) {
            let params = MatmulParams {
                m: rows as u32,
                n: d.n,
                k: d.k,
                k0,
            };
            last = Some(if let MatmulKernel::TiledWith(cfg) = kernel {
                let groups = [n.div_ceil(128) as u32, rows.div_ceil(128) as u32, 1];
                // vec4 bindings: with N and K multiples of 4 every binding's size and offset
                // (whole rows, bands of 128) is a multiple of 16 bytes.
                let source = if cfg.vec4 && n % 4 == 0 && k % 4 == 0 {
                    &shaders::MATMUL_TILED_VEC4
                } else {
                    &shaders::MATMUL_TILED
                };
                // SAFETY: the bindings hold the band's rows of A and C and all of B (checked
                // above); the kernel reads and writes only rows < m, columns < n and K values
                // < k of them and of its workgroup tiles, divides only by constants, and loops
                // as far as the params say.
                unsafe {
                    ctx.dispatch_unchecked(
                        source,
                        &[
                            ("BK", f64::from(cfg.bk)),
                            ("UNROLL", f64::from(u8::from(cfg.unroll))),
                        ],
                        &bindings,
                        bytemuck::bytes_of(&params),
                        groups,
                    )?
                }
            } else {
                let (wg_x, wg_y) = (8u64, 8u64);
                let groups = [
                    n.div_ceil(8 * wg_x) as u32,
                    rows.div_ceil(8 * wg_y) as u32,
                    1,
                ];
                // SAFETY: as for the tiled kernel: the bindings hold what the params describe.
                unsafe {
                    ctx.dispatch_unchecked(
                        &shaders::MATMUL_REGISTER,
                        &[("WG_X", wg_x as f64), ("WG_Y", wg_y as f64)],
                        &bindings,
                        bytemuck::bytes_of(&params),
                        groups,
                    )?
                }
            });
        }
        r0 += rows;
    }
    last_launch(last)
}

#[cfg(test)]
mod tests {
    use super::MatmulParams;
    use crate::params_layout::{check_cuda_fields, check_layout};
    use std::mem::{offset_of, size_of};

    #[test]
    fn params_layout_matches_wgsl() {
        check_layout(
            crate::shaders::MATMUL_PARAMS_WGSL,
            "MatmulParams",
            size_of::<MatmulParams>(),
            &[
                ("m", offset_of!(MatmulParams, m)),
                ("n", offset_of!(MatmulParams, n)),
                ("k", offset_of!(MatmulParams, k)),
                ("k0", offset_of!(MatmulParams, k0)),
            ],
        );
        check_cuda_fields(
            include_str!("../shaders/cuda/params/matmul.cuh"),
            "MatmulParams",
            &[
                ("m", offset_of!(MatmulParams, m)),
                ("n", offset_of!(MatmulParams, n)),
                ("k", offset_of!(MatmulParams, k)),
                ("k0", offset_of!(MatmulParams, k0)),
            ],
        );
    }
}
