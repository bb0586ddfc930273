//! `C = A·B` with a choice of element type: [`MatmulDtype::F16`] multiplies IEEE binary16
//! matrices, accumulating in f32 into an f32 C (mixed precision).
//!
//! # Design
//! A and B hold f16 values (2 bytes each, row-major, any M, N, K); C holds f32. C stays f32
//! because the accumulation is f32: rounding C to f16 would keep 11 of its 24 bits and
//! overflow past 65504, and a caller who wants f16 can convert. Sizes are checked with 2 bytes
//! per element of A and B ([`MatmulDtype::size`]); buffers whose byte size is odd are bound to
//! their last whole 4-byte word, as every binding is.
//!
//! Three kernels, chosen by [`MatmulKernel::Auto`] in this order:
//! 1. [`Vendor`](MatmulKernel::Vendor): cuBLAS `cublasGemmEx` (f16 inputs, f32 output,
//!    `CUBLAS_COMPUTE_32F`) on the CUDA backend where cuBLAS loads.
//! 2. [`Cooperative`](MatmulKernel::Cooperative): shaders/matmul_f16_coop.wgsl, 16×16×16
//!    f16×f16→f32 cooperative matrices (tensor cores) through wgpu's experimental
//!    `EXPERIMENTAL_COOPERATIVE_MATRIX`, where the adapter lists that configuration with
//!    subgroups of exactly 32 (NVIDIA through Vulkan); 128×128 blocks of C per workgroup, tiles
//!    of A and B staged in workgroup memory as f16, zero-padded at the edges, the next step's
//!    loaded into registers while this one multiplies; 16-byte loads where K and N are
//!    multiples of 8 (`MATMUL_F16_COOP_VEC4`), u32 pairs otherwise. Callers' own kernels use
//!    cooperative matrices only when made `unchecked` and launched with
//!    `Context::dispatch_unchecked` (bounds checks do not cover their tiles).
//!
//!    Block shapes ([`CoopTile`], chosen by [`MatmulKernel::CooperativeWith`]): the default
//!    128×128 gives each of its 8 subgroups 32×64 of C (2×4 accumulators), so per 16 of K a
//!    subgroup loads 6 tiles from workgroup memory for 8 multiply-adds, with two barriers
//!    per K step of 32 for 128 multiply-adds of the workgroup. Where K and N are multiples
//!    of 8, shaders/matmul_f16_coop_big.wgsl gives each subgroup 64×64 (4×4 accumulators,
//!    8 loads for 16 multiply-adds: a third less workgroup-memory traffic per multiply-add,
//!    which with the f16 staging stores is the likely limit at 93 TFLOP/s) in blocks of
//!    128×256 or 256×128 (8 subgroups, 256 multiply-adds per barrier pair) or 128×128 with
//!    4 subgroups (workgroups of 128, two of which can share an SM, one's barriers
//!    overlapping the other's multiplications), BK 32 or 64, all within 42 KiB of workgroup
//!    memory (the H200's Vulkan limit is 48 KiB; the wgpu backend requests the adapter's
//!    limits). Staged rows
//!    are padded by 8 halves so that every row stride is an odd number of 16-byte units (no
//!    bank conflicts in a 16×16 load). Each shape stages its tiles either as f16, one 2-byte
//!    store a half, or (`…Wide`, shaders/matmul_f16_coop_big_wide.wgsl) as `vec4<f16>`, one
//!    8-byte store per 4 halves, `coopLoadT` then reading f16 matrices from vec4 elements
//!    (SPIR-V counts strides in the pointer's elements; naga types the load by their
//!    scalar). The 128×128 shape of 4 subgroups also comes with two staging buffers (`…Db`,
//!    41 KiB): step i multiplies from buffer i % 2 while the next tiles go into the other, one
//!    barrier a step instead of two. The default is 128×128 on 4 subgroups staging `vec4<f16>`,
//!    fastest on the H200 (135 TFLOP/s at 4096³ against 96 for the first kernel, 129 for
//!    128×256; double buffering lost, 80–83: BENCHMARKS.md; sweep with benches/matmul_f16.rs,
//!    `VRAMKIT_MATMUL_F16_COOP_TILES=all`).
//! 3. [`Tiled`](MatmulKernel::Tiled) (also named by [`Register`](MatmulKernel::Register)):
//!    shaders/matmul_f16.wgsl, the fallback everywhere else (lavapipe has no cooperative
//!    matrices): the halves read as packed u32 pairs with `unpack2x16float`, so it needs no
//!    `SHADER_F16`, f32 math, 8×8 of C per invocation; its CUDA twin runs on CUDA.
//!
//! [`matmul_f16_kernel`] tells which one runs. Both WGSL kernels run without runtime bounds
//! checks: every global access is guarded by the dimensions, which [`matmul_typed`] checks
//! against the buffers, and no index passes 2³¹ (bands keep each binding under 2³¹ bytes). As
//! the f32 matmul, large A and C go in bands of rows and K in slices of 32,768 (a launch per
//! slice adds to C). The CPU twin and the error bound the tests hold the kernels to are
//! `matmul_f16_cpu` and `matmul_f16_bound` (feature `reference`).

use crate::shaders;
use vramkit::backend::{Backend, CooperativeMatrix, CooperativeScalar};
use vramkit::SubmissionIndex;
use vramkit::{Binding, BufferHandle, Context};
use vramkit::{Error, Result};

use super::matmul_plan::{bands, check_operands, last_launch, Bands};
use super::{matmul_with, MatmulDims, MatmulKernel};

/// The element type of A and B in [`matmul_typed`]; C is f32 for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub enum MatmulDtype {
    /// f32 A, B and C: [`matmul_with`].
    #[default]
    F32,
    /// IEEE binary16 A and B (stored as their 16-bit patterns, row-major), f32 accumulation,
    /// f32 C.
    F16,
}

impl MatmulDtype {
    /// Bytes per element of A and B: 4 or 2 (C holds 4-byte f32 values either way).
    pub const fn size(self) -> u64 {
        match self {
            Self::F32 => 4,
            Self::F16 => 2,
        }
    }

    /// Bytes of a `rows × cols` matrix of this type (the size to allocate for A or B), `None`
    /// past 2⁶⁴. With [`Memory::max_batch`](vramkit::Memory::max_batch) it answers how many matrices of f16 fit:
    ///
    /// ```
    /// use vramkit_kernels::MatmulDtype;
    /// let desc = vramkit::ContextDesc { budget: Some(264 << 20), ..Default::default() };
    /// let ctx = vramkit::Context::host(desc);
    /// let f16 = MatmulDtype::F16.bytes(4096, 4096).unwrap(); // 32 MiB
    /// let f32 = MatmulDtype::F32.bytes(4096, 4096).unwrap(); // 64 MiB
    /// // 256 MiB after the two 4 MiB staging buffers of a first transfer:
    /// assert_eq!(ctx.memory().max_batch(f16)?, 8);
    /// assert_eq!(ctx.memory().max_batch(f32)?, 4);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    pub fn bytes(self, rows: u64, cols: u64) -> Option<u64> {
        rows.checked_mul(cols)?.checked_mul(self.size())
    }
}

/// Block shapes of the [`Cooperative`](MatmulKernel::Cooperative) kernel, one module each
/// (for sweeps: [`MatmulKernel::CooperativeWith`]). Every shape runs with any M, N, K; the
/// shapes with 64×64 of C per subgroup need K and N multiples of 8 and run
/// [`B128x128`](Self::B128x128) otherwise.
///
/// ```
/// use vramkit_kernels::CoopTile;
/// assert_eq!(CoopTile::default(), CoopTile::B128x128Sg4Wide);
/// assert_eq!(CoopTile::B128x256.block(), (128, 256));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub enum CoopTile {
    /// 128×128 of C per workgroup of 256, 32×64 (2×4 accumulators) per subgroup, BK = 32:
    /// shaders/matmul_f16_coop.wgsl (96 TFLOP/s at 4096³ on the H200 through Vulkan); the
    /// kernel for K or N not multiples of 8, whatever the tile asked.
    B128x128,
    /// 128×256 per workgroup of 256, 64×64 (4×4 accumulators) per subgroup, BK = 32:
    /// shaders/matmul_f16_coop_big.wgsl, as the rest, each staging its halves one by one or
    /// (`…Wide`) as `vec4<f16>`.
    B128x256,
    /// 256×128 per workgroup of 256, 64×64 per subgroup, BK = 32.
    B256x128,
    /// 128×128 per workgroup of 128 (4 subgroups of 64×64), BK = 32.
    B128x128Sg4,
    /// [`B128x128Sg4`](Self::B128x128Sg4) with BK = 64.
    B128x128Sg4K64,
    /// [`B128x256`](Self::B128x256) staging `vec4<f16>`.
    B128x256Wide,
    /// [`B256x128`](Self::B256x128) staging `vec4<f16>`.
    B256x128Wide,
    /// [`B128x128Sg4`](Self::B128x128Sg4) staging `vec4<f16>`: the default, fastest on the
    /// H200 through Vulkan (135 TFLOP/s at 4096³; BENCHMARKS.md has every shape).
    #[default]
    B128x128Sg4Wide,
    /// [`B128x128Sg4K64`](Self::B128x128Sg4K64) staging `vec4<f16>`.
    B128x128Sg4K64Wide,
    /// [`B128x128Sg4`](Self::B128x128Sg4) with two staging buffers (one barrier a step).
    B128x128Sg4Db,
    /// [`B128x128Sg4Db`](Self::B128x128Sg4Db) staging `vec4<f16>`.
    B128x128Sg4DbWide,
}

impl CoopTile {
    /// Every shape, the default first.
    pub const ALL: [Self; 11] = [
        Self::B128x128,
        Self::B128x256,
        Self::B256x128,
        Self::B128x128Sg4,
        Self::B128x128Sg4K64,
        Self::B128x256Wide,
        Self::B256x128Wide,
        Self::B128x128Sg4Wide,
        Self::B128x128Sg4K64Wide,
        Self::B128x128Sg4Db,
        Self::B128x128Sg4DbWide,
    ];

    /// Rows and columns of C per workgroup.
    pub const fn block(self) -> (u64, u64) {
        match self {
            Self::B128x256 | Self::B128x256Wide => (128, 256),
            Self::B256x128 | Self::B256x128Wide => (256, 128),
            _ => (128, 128),
        }
    }

    /// The module for K and N multiples of 8 (16-byte loads).
    fn vec4_source(self) -> vramkit::backend::KernelSource {
        match self {
            Self::B128x128 => shaders::MATMUL_F16_COOP_VEC4,
            Self::B128x256 => shaders::MATMUL_F16_COOP_128X256,
            Self::B256x128 => shaders::MATMUL_F16_COOP_256X128,
            Self::B128x128Sg4 => shaders::MATMUL_F16_COOP_128X128,
            Self::B128x128Sg4K64 => shaders::MATMUL_F16_COOP_128X128_K64,
            Self::B128x256Wide => shaders::MATMUL_F16_COOP_128X256_WIDE,
            Self::B256x128Wide => shaders::MATMUL_F16_COOP_256X128_WIDE,
            Self::B128x128Sg4Wide => shaders::MATMUL_F16_COOP_128X128_WIDE,
            Self::B128x128Sg4K64Wide => shaders::MATMUL_F16_COOP_128X128_K64_WIDE,
            Self::B128x128Sg4Db => shaders::MATMUL_F16_COOP_128X128_DB,
            Self::B128x128Sg4DbWide => shaders::MATMUL_F16_COOP_128X128_DB_WIDE,
        }
    }
}

/// Params of the f16 kernels, one launch: the twin of `MatmulF16Params` in
/// shaders/params/matmul_f16.wgsl and shaders/cuda/params/matmul_f16.cuh (a unit test checks
/// the layouts against naga's).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
struct MatmulF16Params {
    /// Rows of A and C in this band.
    m: u32,
    /// Columns of B and C.
    n: u32,
    /// Columns of A, rows of B.
    k: u32,
    /// This launch covers `k0 .. min(k0 + K_SLICE, k)` and adds to C unless `k0` is 0.
    k0: u32,
}

/// K per launch (`K_SLICE_F16` in the kernels' sources).
const K_SLICE: u32 = 32768;

/// Largest binding the f16 kernels use, so that their u32 indices stay below 2³¹.
const MAX_BINDING: u64 = 1 << 31;

/// Whether the backend lists the cooperative-matrix configuration of the cooperative kernel.
fn has_cooperative<B: Backend>(ctx: &Context<B>) -> bool {
    ctx.interop()
        .cooperative_matrices()
        .contains(&CooperativeMatrix {
            m: 16,
            n: 16,
            k: 16,
            inputs: CooperativeScalar::F16,
            accumulator: CooperativeScalar::F32,
        })
}

/// The kernel [`matmul_typed`] runs for [`MatmulDtype::F16`] when asked for `kernel`:
/// [`MatmulKernel::Auto`] resolved (see the [module docs](self)), [`Register`] as [`Tiled`]
/// (one fallback kernel).
///
/// # Errors
/// [`Error::Unsupported`] for [`Vendor`] without a vendor BLAS, [`Cooperative`] where the
/// adapter lists no 16×16×16 f16→f32 cooperative matrix.
///
/// [`Register`]: MatmulKernel::Register
/// [`Tiled`]: MatmulKernel::Tiled
/// [`Vendor`]: MatmulKernel::Vendor
/// [`Cooperative`]: MatmulKernel::Cooperative
pub fn matmul_f16_kernel<B: Backend>(
    ctx: &Context<B>,
    kernel: MatmulKernel,
) -> Result<MatmulKernel> {
    let vendor = ctx.interop().has_vendor_blas();
    let coop = has_cooperative(ctx);
    Ok(match kernel {
        MatmulKernel::Auto if vendor => MatmulKernel::Vendor,
        MatmulKernel::Auto if coop => MatmulKernel::Cooperative,
        MatmulKernel::Auto
        | MatmulKernel::Register
        | MatmulKernel::Tiled
        | MatmulKernel::TiledWith(_) => MatmulKernel::Tiled,
        MatmulKernel::Vendor if !vendor => {
            return Err(ctx
                .interop()
                .vendor_blas_refusal("vendor f16 matmul", "use MatmulKernel::Auto"))
        }
        MatmulKernel::Cooperative | MatmulKernel::CooperativeWith(_) if !coop => {
            return Err(Error::Unsupported {
                what: "cooperative-matrix f16 matmul".into(),
                reason: format!(
                    "`{}` lists no 16×16×16 f16×f16→f32 cooperative matrix with subgroups of 32 \
                     (needs wgpu's EXPERIMENTAL_COOPERATIVE_MATRIX); use MatmulKernel::Auto",
                    ctx.adapter_info().name
                ),
            })
        }
        other => other,
    })
}

/// Records `C = A·B` with A and B of type `dtype` and an f32 C: for [`MatmulDtype::F32`],
/// [`matmul_with`]; for [`MatmulDtype::F16`], the kernel [`matmul_f16_kernel`] names (see
/// the [module docs](self)).
///
/// # Errors
/// As [`matmul_with`], with sizes counted in elements of `dtype`; [`Error::Unsupported`] as
/// [`matmul_f16_kernel`], and for [`MatmulKernel::Cooperative`] with f32.
///
/// ```no_run
/// use vramkit_kernels::{f32_to_f16_bits, matmul_typed, MatmulDims, MatmulDtype, MatmulKernel};
/// use vramkit::{AllocDesc, Context};
/// let ctx = Context::new(Default::default())?;
/// let half = |v: [f32; 4]| v.map(f32_to_f16_bits);
/// let a = ctx.alloc(AllocDesc::new("a", 8))?;
/// let b = ctx.alloc(AllocDesc::new("b", 8))?;
/// let c = ctx.alloc(AllocDesc::new("c", 16))?;
/// ctx.upload(a, bytemuck::cast_slice(&half([1.0, 2.0, 3.0, 4.0])))?;
/// ctx.upload(b, bytemuck::cast_slice(&half([5.0, 6.0, 7.0, 8.0])))?;
/// let d = MatmulDims { m: 2, n: 2, k: 2 };
/// matmul_typed(&ctx, a, b, c, d, MatmulDtype::F16, MatmulKernel::Auto)?;
/// assert_eq!(ctx.download(c)?, bytemuck::cast_slice::<f32, u8>(&[19.0, 22.0, 43.0, 50.0]));
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn matmul_typed<B: Backend>(
    ctx: &Context<B>,
    a: BufferHandle,
    b: BufferHandle,
    c: BufferHandle,
    d: MatmulDims,
    dtype: MatmulDtype,
    kernel: MatmulKernel,
) -> Result<SubmissionIndex> {
    match dtype {
        MatmulDtype::F32 => matmul_with(ctx, a, b, c, d, kernel),
        MatmulDtype::F16 => matmul_f16(ctx, [a, b, c], d, kernel),
    }
}

/// The f16 path of [`matmul_typed`].
fn matmul_f16<B: Backend>(
    ctx: &Context<B>,
    [a, b, c]: [BufferHandle; 3],
    d: MatmulDims,
    kernel: MatmulKernel,
) -> Result<SubmissionIndex> {
    check_operands(ctx, [a, b, c], d, 2)?;
    let kernel = matmul_f16_kernel(ctx, kernel)?;
    let max = ctx.backend().limits().max_binding_size.min(MAX_BINDING);
    let Bands {
        b_bytes,
        rows: band,
    } = bands(d, 2, max)?;
    let (m, n, k) = (u64::from(d.m), u64::from(d.n), u64::from(d.k));
    let mut last = None;
    let mut r0 = 0;
    while r0 < m {
        let rows = band.min(m - r0);
        let bindings = [
            Binding::range(a, r0 * k * 2, (rows * k * 2).next_multiple_of(4)),
            Binding::range(b, 0, b_bytes),
            Binding::range(c, r0 * n * 4, rows * n * 4),
        ];
        // The sizes were checked against the buffers (A and B to their last whole word) and
        // the bands against the binding limit and 2³¹ bytes, and C is neither A nor B.
        if kernel == MatmulKernel::Vendor {
            last = Some(
                ctx.interop()
                    .vendor_matmul_f16(&bindings, [rows as u32, d.n, d.k])?,
            );
            r0 += rows;
            continue;
        }
        for k0 in (0..d.k).step_by(K_SLICE as usize) {
            let params = MatmulF16Params {
                m: rows as u32,
                n: d.n,
                k: d.k,
                k0,
            };
            let tile = match kernel {
                MatmulKernel::Cooperative => Some(CoopTile::default()),
                MatmulKernel::CooperativeWith(t) => Some(t),
                _ => None,
            };
            last = Some(if let Some(tile) = tile {
                // 16-byte loads where every row of A and B starts at a multiple of 8 halves
                // (the bands' and slices' starts are multiples of 8 too); else u32 pairs.
                let (source, (bm, bn)) = if k % 8 == 0 && n % 8 == 0 {
                    (tile.vec4_source(), tile.block())
                } else {
                    (shaders::MATMUL_F16_COOP, CoopTile::B128x128.block())
                };
                let groups = [n.div_ceil(bn) as u32, rows.div_ceil(bm) as u32, 1];
                // SAFETY: the bindings hold the band's rows of A and C and all of B (checked
                // above, with every tile the launch covers); the kernel reads and writes only
                // rows < m, columns < n and K values < k of them and of its workgroup tiles,
                // divides only by constants, and loops as far as the params say.
                unsafe {
                    ctx.dispatch_unchecked(
                        &source,
                        &[],
                        &bindings,
                        bytemuck::bytes_of(&params),
                        groups,
                    )?
                }
            } else {
                let groups = [n.div_ceil(64) as u32, rows.div_ceil(64) as u32, 1];
                // SAFETY: as for the cooperative kernels: the bindings hold what the params
                // describe.
                unsafe {
                    ctx.dispatch_unchecked(
                        &shaders::MATMUL_F16,
                        &[("WG_X", 8.0), ("WG_Y", 8.0)],
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
    use super::MatmulF16Params;
    use crate::params_layout::{check_cuda_fields, check_layout};
    use std::mem::{offset_of, size_of};

    #[test]
    fn params_layout_matches_wgsl() {
        let fields = [
            ("m", offset_of!(MatmulF16Params, m)),
            ("n", offset_of!(MatmulF16Params, n)),
            ("k", offset_of!(MatmulF16Params, k)),
            ("k0", offset_of!(MatmulF16Params, k0)),
        ];
        check_layout(
            crate::shaders::MATMUL_F16_PARAMS_WGSL,
            "MatmulF16Params",
            size_of::<MatmulF16Params>(),
            &fields,
        );
        check_cuda_fields(
            include_str!("../shaders/cuda/params/matmul_f16.cuh"),
            "MatmulF16Params",
            &fields,
        );
    }
}
