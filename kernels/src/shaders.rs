//! Every kernel of vramkit-kernels, embedded from `shaders/`: WGSL, and the CUDA C twins from
//! `shaders/cuda/` (each behind vramkit's [`CUDA_PRELUDE`], the WGSL built-ins it needs).
//! A kernel family's params struct is declared once per language, in `shaders/params/` and
//! `shaders/cuda/params/`, composed in front of the family's kernels and mirrored by one
//! `#[repr(C)]` Rust struct (the image kernels': [`ImageParams`]); unit tests check the three
//! layouts agree.
//!
//! [`ImageParams`]: crate::image::ImageParams

use vramkit::backend::{KernelSource, CUDA_PRELUDE};

mod matmul_f16_coop;
pub use matmul_f16_coop::*;

/// `a` then `b` as `N` bytes, at compile time (`concat!` joins only literals, and the prelude
/// is vramkit's constant).
const fn join<const N: usize>(a: &str, b: &str) -> [u8; N] {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    assert!(
        a.len() + b.len() == N,
        "join: N is not the sum of the lengths"
    );
    let mut out = [0u8; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[a.len() + j] = b[j];
        j += 1;
    }
    out
}

/// A CUDA C twin: vramkit's [`CUDA_PRELUDE`], then the given files of `shaders/cuda/`.
macro_rules! cuda {
    ($($file:expr),+) => {{
        const BODY: &str = concat!($(include_str!(concat!("../shaders/cuda/", $file))),+);
        const LEN: usize = CUDA_PRELUDE.len() + BODY.len();
        const BYTES: [u8; LEN] = join::<LEN>(CUDA_PRELUDE, BODY);
        match std::str::from_utf8(&BYTES) {
            Ok(source) => source,
            Err(_) => panic!("a CUDA twin is not UTF-8"),
        }
    }};
}

/// One of vramkit's kernels: WGSL, its CUDA twin, and launched without checks only through a
/// function that validates its params (see [`KernelSource::unchecked`]); [`Context::dispatch`]
/// runs it with bounds checks.
///
/// [`Context::dispatch`]: vramkit::Context::dispatch
macro_rules! kernel {
    ($label:expr, $wgsl:expr, $entry:expr, $cuda:expr) => {
        // SAFETY: `cuda!` puts the prelude first, and every twin in shaders/cuda/ declares its
        // bindings as `BUF(T)` and reaches memory only by indexing them; every kernel in
        // shaders/ writes the workgroup memory it reads before reading it.
        unsafe {
            KernelSource::new($label, $wgsl, $entry)
                .with_cuda($cuda)
                .unchecked()
        }
    };
}

/// `y[i] = a * x[i] + b` over `n` f32 values: bindings `x` (read), `y` (write), then params
/// `{ a: f32, b: f32, n: u32 }`; workgroups of 256, in x (and y past 65,535 of them). See
/// [`crate::scale`].
pub const SCALE: KernelSource = kernel!(
    "scale",
    include_str!("../shaders/scale.wgsl"),
    "scale",
    cuda!("scale.cu")
);

/// `y[i] = a * x[i] + y[i]`: bindings `x`, `y`, then params `{ a: f32, n: u32 }`. See
/// [`crate::axpy`].
pub const AXPY: KernelSource = kernel!(
    "axpy",
    include_str!("../shaders/axpy.wgsl"),
    "axpy",
    cuda!("axpy.cu")
);

/// `z[i] = x[i] + y[i]`: bindings `x`, `y`, `z`, then params `{ n: u32 }`. See
/// [`crate::add`].
pub const ADD: KernelSource = kernel!(
    "add",
    include_str!("../shaders/add.wgsl"),
    "add",
    cuda!("add.cu")
);

/// The matmul family's params struct in WGSL (`MatmulParams`, `K_SLICE`), composed in front of
/// [`MATMUL_REGISTER`] and [`MATMUL_TILED`].
#[cfg(test)]
pub(crate) const MATMUL_PARAMS_WGSL: &str = include_str!("../shaders/params/matmul.wgsl");

/// `C = A·B` without workgroup memory, 8×8 per invocation (CPU adapters). Override constants
/// `WG_X`, `WG_Y`. See [`crate::matmul`].
pub const MATMUL_REGISTER: KernelSource = kernel!(
    "matmul_register",
    concat!(
        include_str!("../shaders/params/matmul.wgsl"),
        include_str!("../shaders/matmul_register.wgsl")
    ),
    "matmul",
    cuda!("params/matmul.cuh", "matmul_register.cu")
);

/// `C = A·B` with 128×128 workgroup tiles staged in workgroup memory, 8×8 per invocation
/// (GPUs), any M, N, K. Override constant `BK` (8 or 16). See [`crate::matmul`].
pub const MATMUL_TILED: KernelSource = kernel!(
    "matmul_tiled",
    concat!(
        include_str!("../shaders/params/matmul.wgsl"),
        include_str!("../shaders/matmul_tiled_scalar.wgsl"),
        include_str!("../shaders/matmul_tiled.wgsl")
    ),
    "matmul",
    cuda!(
        "params/matmul.cuh",
        "matmul_tiled_scalar.cuh",
        "matmul_tiled.cu"
    )
);

/// [`MATMUL_TILED`] for N and K multiples of 4: A, B and C bound as `vec4<f32>` arrays (each
/// binding's size a multiple of 16 bytes), one vec4 load or store per 4 values.
pub const MATMUL_TILED_VEC4: KernelSource = kernel!(
    "matmul_tiled_vec4",
    concat!(
        include_str!("../shaders/params/matmul.wgsl"),
        include_str!("../shaders/matmul_tiled_vec4.wgsl"),
        include_str!("../shaders/matmul_tiled.wgsl")
    ),
    "matmul",
    cuda!(
        "params/matmul.cuh",
        "matmul_tiled_vec4.cuh",
        "matmul_tiled.cu"
    )
);

/// `C = A·B` with f16 A and B (packed u32 pairs) and an f32 C, f32 math, 8×8 per invocation
/// in workgroups of `WG_X`×`WG_Y`: the f16 matmul's fallback where the adapter has no
/// cooperative matrices (lavapipe), and its CUDA twin. See [`crate::matmul_typed`].
pub const MATMUL_F16: KernelSource = kernel!(
    "matmul_f16",
    concat!(
        include_str!("../shaders/params/matmul_f16.wgsl"),
        include_str!("../shaders/matmul_f16.wgsl")
    ),
    "matmul",
    cuda!("params/matmul_f16.cuh", "matmul_f16.cu")
);

/// The f16 matmul's params struct in WGSL (`MatmulF16Params`, `K_SLICE_F16`), composed in
/// front of [`MATMUL_F16`] and [`MATMUL_F16_COOP`].
#[cfg(test)]
pub(crate) const MATMUL_F16_PARAMS_WGSL: &str = include_str!("../shaders/params/matmul_f16.wgsl");

/// The kernels that need optional device features (WGSL only), for validation.
pub const FEATURE_KERNELS: &[KernelSource] = &[
    MATMUL_F16_COOP,
    MATMUL_F16_COOP_VEC4,
    MATMUL_F16_COOP_128X256,
    MATMUL_F16_COOP_128X256_WIDE,
    MATMUL_F16_COOP_256X128,
    MATMUL_F16_COOP_256X128_WIDE,
    MATMUL_F16_COOP_128X128,
    MATMUL_F16_COOP_128X128_WIDE,
    MATMUL_F16_COOP_128X128_K64,
    MATMUL_F16_COOP_128X128_K64_WIDE,
    MATMUL_F16_COOP_128X128_DB,
    MATMUL_F16_COOP_128X128_DB_WIDE,
];

/// An image kernel's label and WGSL: the io preludes for its source and destination formats,
/// then any further preludes of `shaders/io/` (`alpha` for filters: premultiplied alpha), then
/// its body.
macro_rules! image_wgsl {
    ($src:literal, $dst:literal, $file:literal, $entry:literal $(, $prelude:literal)*) => {
        (
            concat!($file, "::", $entry, " (", $src, " -> ", $dst, ")"),
            concat!(
                include_str!("../shaders/params/image.wgsl"),
                include_str!("../shaders/io/srgb.wgsl"),
                include_str!("../shaders/io/bits.wgsl"),
                include_str!(concat!("../shaders/io/src_", $src, ".wgsl")),
                include_str!(concat!("../shaders/io/dst_", $dst, ".wgsl")),
                $(include_str!(concat!("../shaders/io/", $prelude, ".wgsl")),)*
                include_str!(concat!("../shaders/", $file, ".wgsl")),
            ),
        )
    };
}

/// An image kernel (see `image_wgsl!`) and its CUDA twin, composed the same way.
macro_rules! image_kernel {
    (
        $(#[$doc:meta])* $name:ident, $src:literal, $dst:literal, $file:literal, $entry:literal
        $(, $prelude:literal)*
    ) => {
        $(#[$doc])*
        pub const $name: KernelSource = kernel!(
            image_wgsl!($src, $dst, $file, $entry $(, $prelude)*).0,
            image_wgsl!($src, $dst, $file, $entry $(, $prelude)*).1,
            $entry,
            cuda!(
                "params/image.cuh",
                "io/srgb.cuh",
                concat!("io/src_", $src, ".cuh"),
                concat!("io/dst_", $dst, ".cuh"),
                $(concat!("io/", $prelude, ".cuh"),)*
                concat!($file, ".cu")
            )
        );
    };
}

image_kernel!(
    /// RGBA8 to RGBA32F over a region. See [`crate::image`].
    IMAGE_UNPACK, "rgba8", "rgba32f", "image_copy", "copy"
);
image_kernel!(
    /// RGBA32F to RGBA8 over a region.
    IMAGE_PACK, "rgba32f", "rgba8", "image_copy", "copy"
);
image_kernel!(
    /// RGBA16 to RGBA32F over a region.
    IMAGE_UNPACK_RGBA16, "rgba16", "rgba32f", "image_copy", "copy"
);
image_kernel!(
    /// RGBA32F to RGBA16 over a region.
    IMAGE_PACK_RGBA16, "rgba32f", "rgba16", "image_copy", "copy"
);
image_kernel!(
    /// Horizontal blur pass, RGBA32F into the RGBA32F intermediate.
    BLUR_HORIZONTAL, "rgba32f", "rgba32f", "image_blur", "horizontal", "alpha"
);
image_kernel!(
    /// Horizontal blur pass, RGBA8 into the f16 intermediate.
    BLUR_HORIZONTAL_RGBA8, "rgba8", "half", "image_blur", "horizontal", "alpha"
);
image_kernel!(
    /// Vertical blur pass, the RGBA32F intermediate into RGBA32F.
    BLUR_VERTICAL, "rgba32f", "rgba32f", "image_blur", "vertical", "alpha"
);
image_kernel!(
    /// Vertical blur pass, the f16 intermediate into RGBA8.
    BLUR_VERTICAL_RGBA8, "half", "rgba8", "image_blur", "vertical", "alpha"
);
image_kernel!(
    /// Horizontal blur pass, sRGB-encoded RGBA8 (read as linear light) into the RGBA32F
    /// intermediate: a chain's leading `linear` fused into its blur.
    BLUR_HORIZONTAL_SRGBA8, "srgba8", "rgba32f", "image_blur", "horizontal", "alpha"
);
image_kernel!(
    /// Vertical blur pass, the RGBA32F intermediate into sRGB-encoded RGBA8: a chain's
    /// trailing `srgb` fused into its blur.
    BLUR_VERTICAL_TO_SRGBA8, "rgba32f", "srgba8", "image_blur", "vertical", "alpha"
);
image_kernel!(
    /// Horizontal blur pass, sRGB-encoded RGBA8 (read as linear light) into the f16
    /// intermediate of [`crate::image::blur_area2`].
    BLUR_HORIZONTAL_SRGBA8_TO_HALF, "srgba8", "half", "image_blur", "horizontal", "alpha"
);
image_kernel!(
    /// [`BLUR_HORIZONTAL`] with coalesced reads and writes through workgroup memory, for radii
    /// up to [`BLUR_STAGED_MAX_RADIUS`]: workgroups of 32×4 cover 256 columns × 4 rows, and
    /// every pixel is the one [`BLUR_HORIZONTAL`] computes, bit for bit.
    ///
    /// [`BLUR_STAGED_MAX_RADIUS`]: crate::image::BLUR_STAGED_MAX_RADIUS
    BLUR_HORIZONTAL_STAGED, "rgba32f", "rgba32f", "image_blur", "horizontal_staged", "alpha"
);
image_kernel!(
    /// [`BLUR_HORIZONTAL_RGBA8`] staged as [`BLUR_HORIZONTAL_STAGED`].
    BLUR_HORIZONTAL_RGBA8_STAGED, "rgba8", "half", "image_blur", "horizontal_staged", "alpha"
);
image_kernel!(
    /// [`BLUR_HORIZONTAL_SRGBA8`] staged as [`BLUR_HORIZONTAL_STAGED`].
    BLUR_HORIZONTAL_SRGBA8_STAGED, "srgba8", "rgba32f", "image_blur", "horizontal_staged",
    "alpha"
);
image_kernel!(
    /// [`BLUR_HORIZONTAL_SRGBA8_TO_HALF`] staged as [`BLUR_HORIZONTAL_STAGED`].
    BLUR_HORIZONTAL_SRGBA8_TO_HALF_STAGED, "srgba8", "half", "image_blur", "horizontal_staged",
    "alpha"
);
image_kernel!(
    /// Vertical blur pass fused with an exact 2× area downscale
    /// ([`crate::image::blur_area2`]): the f16 intermediate into sRGB-encoded RGBA8.
    /// Workgroups of 16×16 cover 16 output columns × 32 output rows.
    BLUR_AREA2_HALF_TO_SRGBA8, "half", "srgba8", "image_blur", "vertical_area2", "alpha"
);
image_kernel!(
    /// As [`BLUR_AREA2_HALF_TO_SRGBA8`], into RGBA8.
    BLUR_AREA2_HALF_TO_RGBA8, "half", "rgba8", "image_blur", "vertical_area2", "alpha"
);
image_kernel!(
    /// As [`BLUR_AREA2_HALF_TO_SRGBA8`], into RGBA32F.
    BLUR_AREA2_HALF_TO_RGBA32F, "half", "rgba32f", "image_blur", "vertical_area2", "alpha"
);
image_kernel!(
    /// As [`BLUR_AREA2_HALF_TO_SRGBA8`], the RGBA32F intermediate into RGBA32F.
    BLUR_AREA2, "rgba32f", "rgba32f", "image_blur", "vertical_area2", "alpha"
);
image_kernel!(
    /// As [`BLUR_AREA2_HALF_TO_SRGBA8`], the RGBA32F intermediate into sRGB-encoded RGBA8.
    BLUR_AREA2_TO_SRGBA8, "rgba32f", "srgba8", "image_blur", "vertical_area2", "alpha"
);
image_kernel!(
    /// Bilinear resize, sRGB-encoded RGBA8 (read as linear light) into RGBA32F.
    RESIZE_BILINEAR_FROM_SRGBA8, "srgba8", "rgba32f", "image_resize", "bilinear", "alpha"
);
image_kernel!(
    /// Bilinear resize, RGBA32F into sRGB-encoded RGBA8.
    RESIZE_BILINEAR_TO_SRGBA8, "rgba32f", "srgba8", "image_resize", "bilinear", "alpha"
);
image_kernel!(
    /// Area-average resize, sRGB-encoded RGBA8 (read as linear light) into RGBA32F.
    RESIZE_AREA_FROM_SRGBA8, "srgba8", "rgba32f", "image_resize", "area", "alpha"
);
image_kernel!(
    /// Area-average resize, RGBA32F into sRGB-encoded RGBA8.
    RESIZE_AREA_TO_SRGBA8, "rgba32f", "srgba8", "image_resize", "area", "alpha"
);
image_kernel!(
    /// Bilinear resize, RGBA32F.
    RESIZE_BILINEAR, "rgba32f", "rgba32f", "image_resize", "bilinear", "alpha"
);
image_kernel!(
    /// Bilinear resize, RGBA8.
    RESIZE_BILINEAR_RGBA8, "rgba8", "rgba8", "image_resize", "bilinear", "alpha"
);
image_kernel!(
    /// Area-average resize, RGBA32F.
    RESIZE_AREA, "rgba32f", "rgba32f", "image_resize", "area", "alpha"
);
image_kernel!(
    /// Area-average resize, RGBA8.
    RESIZE_AREA_RGBA8, "rgba8", "rgba8", "image_resize", "area", "alpha"
);
image_kernel!(
    /// sRGB to linear, RGBA32F.
    SRGB_TO_LINEAR, "rgba32f", "rgba32f", "image_color", "srgb_to_linear"
);
image_kernel!(
    /// sRGB to linear, RGBA8, by a table of the 256 byte values: workgroups of 16×16 cover 64
    /// columns × 16 rows.
    SRGB_TO_LINEAR_RGBA8, "rgba8", "rgba8", "image_color_rgba8", "srgb_to_linear"
);
image_kernel!(
    /// Linear to sRGB, RGBA32F.
    LINEAR_TO_SRGB, "rgba32f", "rgba32f", "image_color", "linear_to_srgb"
);
image_kernel!(
    /// Linear to sRGB, RGBA8, by table as [`SRGB_TO_LINEAR_RGBA8`].
    LINEAR_TO_SRGB_RGBA8, "rgba8", "rgba8", "image_color_rgba8", "linear_to_srgb"
);
image_kernel!(
    /// sRGB to linear, RGBA8 into RGBA32F (an RGBA8 chain's linear stages are RGBA32F).
    SRGB_TO_LINEAR_RGBA8_TO_RGBA32F, "rgba8", "rgba32f", "image_color", "srgb_to_linear"
);
image_kernel!(
    /// Linear to sRGB, RGBA32F into RGBA8 (ending an RGBA8 chain's linear stages).
    LINEAR_TO_SRGB_RGBA32F_TO_RGBA8, "rgba32f", "rgba8", "image_color", "linear_to_srgb"
);
image_kernel!(
    /// Rec. 709 luma, RGBA32F.
    LUMA, "rgba32f", "rgba32f", "image_color", "luma"
);
image_kernel!(
    /// Rec. 709 luma, RGBA8.
    LUMA_RGBA8, "rgba8", "rgba8", "image_color", "luma"
);
image_kernel!(
    /// Brightness, contrast and gamma, RGBA32F.
    ADJUST, "rgba32f", "rgba32f", "image_color", "adjust"
);
image_kernel!(
    /// Brightness, contrast and gamma, RGBA8, by table as [`SRGB_TO_LINEAR_RGBA8`].
    ADJUST_RGBA8, "rgba8", "rgba8", "image_color_rgba8", "adjust"
);

/// An image kernel that binds a texture: WGSL only (CUDA and the host keep such data in
/// buffers), launched through [`Textures::dispatch`](vramkit::texture::Textures::dispatch)
/// and so always compiled with bounds checks.
macro_rules! texture_image_kernel {
    (
        $(#[$doc:meta])* $name:ident, $src:literal, $dst:literal, $file:literal, $entry:literal
        $(, $prelude:literal)*
    ) => {
        $(#[$doc])*
        pub const $name: KernelSource = KernelSource::new(
            image_wgsl!($src, $dst, $file, $entry $(, $prelude)*).0,
            image_wgsl!($src, $dst, $file, $entry $(, $prelude)*).1,
            $entry,
        );
    };
}

texture_image_kernel!(
    /// Horizontal blur pass, RGBA32F into the intermediate held in a texture.
    BLUR_HORIZONTAL_TO_TEXTURE, "rgba32f", "texture", "image_blur", "horizontal",
    "alpha"
);
texture_image_kernel!(
    /// Horizontal blur pass, RGBA8 into the intermediate held in a texture, rounded to f16 as
    /// in a buffer.
    BLUR_HORIZONTAL_RGBA8_TO_TEXTURE, "rgba8", "texture_half", "image_blur", "horizontal",
    "alpha"
);
texture_image_kernel!(
    /// Vertical blur pass, the intermediate held in a texture into RGBA32F.
    BLUR_VERTICAL_FROM_TEXTURE, "texture", "rgba32f", "image_blur", "vertical",
    "alpha"
);
texture_image_kernel!(
    /// Vertical blur pass, the intermediate held in a texture into RGBA8.
    BLUR_VERTICAL_RGBA8_FROM_TEXTURE, "texture", "rgba8", "image_blur", "vertical",
    "alpha"
);

texture_image_kernel!(
    /// Horizontal blur pass, sRGB-encoded RGBA8 into the intermediate held in a texture.
    BLUR_HORIZONTAL_SRGBA8_TO_TEXTURE, "srgba8", "texture", "image_blur", "horizontal",
    "alpha"
);
texture_image_kernel!(
    /// Vertical blur pass, the intermediate held in a texture into sRGB-encoded RGBA8.
    BLUR_VERTICAL_TO_SRGBA8_FROM_TEXTURE, "texture", "srgba8", "image_blur", "vertical",
    "alpha"
);

/// The kernels that bind textures (WGSL only), for validation.
pub const TEXTURE_KERNELS: &[KernelSource] = &[
    BLUR_HORIZONTAL_TO_TEXTURE,
    BLUR_HORIZONTAL_RGBA8_TO_TEXTURE,
    BLUR_VERTICAL_FROM_TEXTURE,
    BLUR_VERTICAL_RGBA8_FROM_TEXTURE,
    BLUR_HORIZONTAL_SRGBA8_TO_TEXTURE,
    BLUR_VERTICAL_TO_SRGBA8_FROM_TEXTURE,
];

/// All kernels with CUDA twins, for validation ([`TEXTURE_KERNELS`] are the others), with the
/// one vramkit's wgpu backend runs for itself ([`BUFFER_COPY`](vramkit::backend::BUFFER_COPY)).
pub const ALL: &[KernelSource] = &[
    SCALE,
    AXPY,
    ADD,
    vramkit::backend::BUFFER_COPY,
    MATMUL_REGISTER,
    MATMUL_TILED,
    MATMUL_TILED_VEC4,
    MATMUL_F16,
    IMAGE_UNPACK,
    IMAGE_PACK,
    IMAGE_UNPACK_RGBA16,
    IMAGE_PACK_RGBA16,
    BLUR_HORIZONTAL,
    BLUR_HORIZONTAL_RGBA8,
    BLUR_VERTICAL,
    BLUR_VERTICAL_RGBA8,
    BLUR_HORIZONTAL_SRGBA8,
    BLUR_VERTICAL_TO_SRGBA8,
    BLUR_HORIZONTAL_SRGBA8_TO_HALF,
    BLUR_HORIZONTAL_STAGED,
    BLUR_HORIZONTAL_RGBA8_STAGED,
    BLUR_HORIZONTAL_SRGBA8_STAGED,
    BLUR_HORIZONTAL_SRGBA8_TO_HALF_STAGED,
    BLUR_AREA2_HALF_TO_SRGBA8,
    BLUR_AREA2_HALF_TO_RGBA8,
    BLUR_AREA2_HALF_TO_RGBA32F,
    BLUR_AREA2,
    BLUR_AREA2_TO_SRGBA8,
    RESIZE_BILINEAR_FROM_SRGBA8,
    RESIZE_BILINEAR_TO_SRGBA8,
    RESIZE_AREA_FROM_SRGBA8,
    RESIZE_AREA_TO_SRGBA8,
    RESIZE_BILINEAR,
    RESIZE_BILINEAR_RGBA8,
    RESIZE_AREA,
    RESIZE_AREA_RGBA8,
    SRGB_TO_LINEAR,
    SRGB_TO_LINEAR_RGBA8,
    LINEAR_TO_SRGB,
    LINEAR_TO_SRGB_RGBA8,
    SRGB_TO_LINEAR_RGBA8_TO_RGBA32F,
    LINEAR_TO_SRGB_RGBA32F_TO_RGBA8,
    LUMA,
    LUMA_RGBA8,
    ADJUST,
    ADJUST_RGBA8,
];
