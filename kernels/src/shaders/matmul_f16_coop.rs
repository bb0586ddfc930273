//! The cooperative-matrix f16 matmul's modules (WGSL only; see
//! [`crate::matmul_typed`]): the 128×128 kernel with its two loaders, and the
//! kernels with 64×64 of C per subgroup in each block shape and staging
//! ([`crate::CoopTile`]).

use vramkit::backend::KernelSource;

/// A cooperative f16 matmul module: the extensions and the params struct, then `$wgsl`.
macro_rules! coop_source {
    ($label:literal, $($wgsl:expr),+) => {
        // SAFETY: (1) every kernel stages A and B in workgroup memory and passes a
        // `workgroupBarrier` before it reads them there; (2) none has a CUDA twin; (3) each
        // uses the 16×16×16 f16×f16→f32 subgroup configuration, launched by `matmul_typed` only
        // where the adapter lists it with subgroups of 32, keeps every cooperative operation in
        // uniform control flow, and aligns its workgroup-memory pointers to 16 bytes with
        // strides of multiples of 16 bytes.
        unsafe {
            KernelSource::new(
                $label,
                concat!(
                    "enable f16;\nenable wgpu_cooperative_matrix;\n",
                    include_str!("../../shaders/params/matmul_f16.wgsl"),
                    $($wgsl),+
                ),
                "matmul",
            )
            .unchecked()
        }
    };
}

/// The cooperative f16 matmul (see [`MATMUL_F16_COOP`]) composed with a loader.
macro_rules! coop_kernel {
    ($label:literal, $loader:literal) => {
        coop_source!(
            $label,
            include_str!(concat!("../../shaders/", $loader, ".wgsl")),
            include_str!("../../shaders/matmul_f16_coop.wgsl")
        )
    };
}

/// `C = A·B` with f16 A and B and an f32 C on 16×16×16 cooperative matrices (tensor cores),
/// 128×128 per workgroup of 256, A and B read as u32 pairs (any K and N): WGSL only, for
/// adapters that list that configuration with subgroups of 32 (it needs
/// `EXPERIMENTAL_COOPERATIVE_MATRIX`, `SHADER_F16` and `SUBGROUP`). See
/// [`crate::matmul_typed`].
// No CUDA twin: on CUDA the f16 matmul runs on cuBLAS or MATMUL_F16.
pub const MATMUL_F16_COOP: KernelSource = coop_kernel!("matmul_f16_coop", "matmul_f16_coop_words");

/// [`MATMUL_F16_COOP`] reading A and B 8 halves a load, for K and N multiples of 8.
pub const MATMUL_F16_COOP_VEC4: KernelSource =
    coop_kernel!("matmul_f16_coop_vec4", "matmul_f16_coop_vec4");

/// The cooperative f16 matmul with 64×64 of C per subgroup (shaders/matmul_f16_coop_big.wgsl)
/// composed with its global loads (shaders/matmul_f16_coop_big_fetch.wgsl) and `$loader`'s
/// staging, `$grid` its subgroup grid and step: consts SGM, SGN, BK and NBUF.
macro_rules! coop_big_kernel {
    ($label:literal, $loader:literal, $grid:literal) => {
        coop_source!(
            $label,
            $grid,
            include_str!("../../shaders/matmul_f16_coop_big_fetch.wgsl"),
            include_str!(concat!("../../shaders/", $loader, ".wgsl")),
            include_str!("../../shaders/matmul_f16_coop_big.wgsl")
        )
    };
}

/// The cooperative f16 matmul with a 128×256 block of C per workgroup: 2×4 subgroups of 64×64 (4×4 accumulators each), BK = 32; K and N multiples of 8; halves staged one by one.
pub const MATMUL_F16_COOP_128X256: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x256",
    "matmul_f16_coop_big_vec4",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 4u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 1u;\n"
);

/// [`MATMUL_F16_COOP_128X256`] staging `vec4<f16>` (8-byte workgroup stores).
pub const MATMUL_F16_COOP_128X256_WIDE: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x256_wide",
    "matmul_f16_coop_big_wide",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 4u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 1u;\n"
);

/// The cooperative f16 matmul with a 256×128 block: 4×2 subgroups of 64×64, BK = 32; halves staged one by one.
pub const MATMUL_F16_COOP_256X128: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_256x128",
    "matmul_f16_coop_big_vec4",
    "const SGM: u32 = 4u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 1u;\n"
);

/// [`MATMUL_F16_COOP_256X128`] staging `vec4<f16>` (8-byte workgroup stores).
pub const MATMUL_F16_COOP_256X128_WIDE: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_256x128_wide",
    "matmul_f16_coop_big_wide",
    "const SGM: u32 = 4u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 1u;\n"
);

/// The cooperative f16 matmul with a 128×128 block: 2×2 subgroups of 64×64 in workgroups of 128 (two fit an SM), BK = 32; halves staged one by one.
pub const MATMUL_F16_COOP_128X128: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x128",
    "matmul_f16_coop_big_vec4",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 1u;\n"
);

/// [`MATMUL_F16_COOP_128X128`] staging `vec4<f16>` (8-byte workgroup stores).
pub const MATMUL_F16_COOP_128X128_WIDE: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x128_wide",
    "matmul_f16_coop_big_wide",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 1u;\n"
);

/// The cooperative f16 matmul with a 128×128 block in workgroups of 128, BK = 64 (half the barriers, twice the registers staged); halves staged one by one.
pub const MATMUL_F16_COOP_128X128_K64: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x128_k64",
    "matmul_f16_coop_big_vec4",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 64u;\nconst NBUF: u32 = 1u;\n"
);

/// [`MATMUL_F16_COOP_128X128_K64`] staging `vec4<f16>` (8-byte workgroup stores).
pub const MATMUL_F16_COOP_128X128_K64_WIDE: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x128_k64_wide",
    "matmul_f16_coop_big_wide",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 64u;\nconst NBUF: u32 = 1u;\n"
);

/// [`MATMUL_F16_COOP_128X128`] with two staging buffers (one barrier a step; 41 KiB of
/// workgroup memory).
pub const MATMUL_F16_COOP_128X128_DB: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x128_db",
    "matmul_f16_coop_big_vec4",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 2u;\n"
);

/// [`MATMUL_F16_COOP_128X128_DB`] staging `vec4<f16>`.
pub const MATMUL_F16_COOP_128X128_DB_WIDE: KernelSource = coop_big_kernel!(
    "matmul_f16_coop_128x128_db_wide",
    "matmul_f16_coop_big_wide",
    "const SGM: u32 = 2u;\nconst SGN: u32 = 2u;\nconst BK: u32 = 32u;\nconst NBUF: u32 = 2u;\n"
);
