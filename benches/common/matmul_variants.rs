//! The matmul kernels a bench runs: `VRAMKIT_MATMUL_VARIANTS`, a comma-separated list of
//! `register`, `tiled` (the default configuration), `tiled_bk8`, `tiled_bk16` (the tiled
//! kernel with `TiledConfig { bk, vec4: true, unroll: false }`), `tiled_bk8_scalar`,
//! `tiled_bk16_scalar` (`vec4: false`: scalar loads even where N and K are multiples of 4),
//! `tiled_bk8_unroll`, `tiled_bk16_unroll`, `tiled_bk8_scalar_unroll` (`unroll: true`: the k
//! loop of a step written out in WGSL) and, on CUDA, `cublas`; unset, all of them.

use vramkit_kernels::{MatmulKernel, TiledConfig};

/// Every variant by its name in bench ids (`vramkit_<name>`).
const ALL: [(&str, MatmulKernel); 10] = [
    ("cublas", MatmulKernel::Vendor),
    ("tiled", MatmulKernel::Tiled),
    ("tiled_bk8", tiled(8, true, false)),
    ("tiled_bk16", tiled(16, true, false)),
    ("tiled_bk8_scalar", tiled(8, false, false)),
    ("tiled_bk16_scalar", tiled(16, false, false)),
    ("tiled_bk8_unroll", tiled(8, true, true)),
    ("tiled_bk16_unroll", tiled(16, true, true)),
    ("tiled_bk8_scalar_unroll", tiled(8, false, true)),
    ("register", MatmulKernel::Register),
];

const fn tiled(bk: u32, vec4: bool, unroll: bool) -> MatmulKernel {
    MatmulKernel::TiledWith(TiledConfig { bk, vec4, unroll })
}

/// The variants selected by `VRAMKIT_MATMUL_VARIANTS`, in the order of [`ALL`], as
/// `(bench id, kernel)`; `cublas` only where `vendor` is true. Panics on an unknown name, so a
/// typo in a sweep fails instead of measuring nothing.
pub fn selected(vendor: bool) -> Vec<(String, MatmulKernel)> {
    let wanted: Option<Vec<String>> = std::env::var("VRAMKIT_MATMUL_VARIANTS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    if let Some(w) = &wanted {
        for name in w {
            assert!(
                ALL.iter().any(|(n, _)| n == name),
                "VRAMKIT_MATMUL_VARIANTS: unknown variant `{name}` (known: {:?})",
                ALL.map(|(n, _)| n)
            );
        }
    }
    ALL.iter()
        .filter(|(_, k)| vendor || *k != MatmulKernel::Vendor)
        .filter(|(name, _)| wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == name)))
        .map(|&(name, k)| (format!("vramkit_{name}"), k))
        .collect()
}
