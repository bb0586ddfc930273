//! Every WGSL kernel of vramkit, embedded from `shaders/`.

use crate::backend::KernelSource;

/// `y[i] = a * x[i] + b` over `n` f32 values: bindings `x` (read), `y` (write), then params
/// `{ a: f32, b: f32, n: u32 }`; workgroups of 256, in x (and y past 65,535 of them). See
/// [`crate::kernels::scale`].
pub const SCALE: KernelSource = KernelSource {
    label: "scale",
    wgsl: include_str!("../shaders/scale.wgsl"),
    entry: "main",
    guarded: true,
};

/// `y[i] = a * x[i] + y[i]`: bindings `x`, `y`, then params `{ a: f32, n: u32 }`. See
/// [`crate::kernels::axpy`].
pub const AXPY: KernelSource = KernelSource {
    label: "axpy",
    wgsl: include_str!("../shaders/axpy.wgsl"),
    entry: "main",
    guarded: true,
};

/// `z[i] = x[i] + y[i]`: bindings `x`, `y`, `z`, then params `{ n: u32 }`. See
/// [`crate::kernels::add`].
pub const ADD: KernelSource = KernelSource {
    label: "add",
    wgsl: include_str!("../shaders/add.wgsl"),
    entry: "main",
    guarded: true,
};

/// `C = A·B` without workgroup memory, 8×8 per invocation (CPU adapters). Override constants
/// `WG_X`, `WG_Y`. See [`crate::kernels::matmul`].
pub const MATMUL_REGISTER: KernelSource = KernelSource {
    label: "matmul_register",
    wgsl: include_str!("../shaders/matmul_register.wgsl"),
    entry: "main",
    guarded: true,
};

/// `C = A·B` with 128×128 workgroup tiles staged in workgroup memory, 8×8 per invocation
/// (GPUs). See [`crate::kernels::matmul`].
pub const MATMUL_TILED: KernelSource = KernelSource {
    label: "matmul_tiled",
    wgsl: include_str!("../shaders/matmul_tiled.wgsl"),
    entry: "main",
    guarded: true,
};

macro_rules! image_kernel {
    ($(#[$doc:meta])* $name:ident, $file:literal, $entry:literal) => {
        $(#[$doc])*
        pub const $name: KernelSource = KernelSource {
            label: concat!($file, "::", $entry),
            wgsl: include_str!(concat!("../shaders/", $file, ".wgsl")),
            entry: $entry,
            guarded: true,
        };
    };
}

image_kernel!(
    /// RGBA8 to RGBA32F over a region. See [`crate::kernels::image`].
    IMAGE_UNPACK, "image_unpack", "main"
);
image_kernel!(
    /// RGBA32F to RGBA8 over a region.
    IMAGE_PACK, "image_pack", "main"
);
image_kernel!(
    /// Horizontal pass of a separable convolution (Gaussian or box blur).
    BLUR_HORIZONTAL, "image_blur", "horizontal"
);
image_kernel!(
    /// Vertical pass of a separable convolution.
    BLUR_VERTICAL, "image_blur", "vertical"
);
image_kernel!(
    /// Bilinear resize.
    RESIZE_BILINEAR, "image_resize", "bilinear"
);
image_kernel!(
    /// Area-average resize.
    RESIZE_AREA, "image_resize", "area"
);
image_kernel!(
    /// sRGB to linear.
    SRGB_TO_LINEAR, "image_color", "srgb_to_linear"
);
image_kernel!(
    /// Linear to sRGB.
    LINEAR_TO_SRGB, "image_color", "linear_to_srgb"
);
image_kernel!(
    /// Rec. 709 luma.
    LUMA, "image_color", "luma"
);
image_kernel!(
    /// Brightness, contrast and gamma.
    ADJUST, "image_color", "adjust"
);

/// All kernels, for validation.
pub const ALL: &[KernelSource] = &[
    SCALE,
    AXPY,
    ADD,
    MATMUL_REGISTER,
    MATMUL_TILED,
    IMAGE_UNPACK,
    IMAGE_PACK,
    BLUR_HORIZONTAL,
    BLUR_VERTICAL,
    RESIZE_BILINEAR,
    RESIZE_AREA,
    SRGB_TO_LINEAR,
    LINEAR_TO_SRGB,
    LUMA,
    ADJUST,
];
