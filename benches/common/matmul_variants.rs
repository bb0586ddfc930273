//! The matmul kernels a bench runs: `VRAMKIT_MATMUL_VARIANTS`, a comma-separated list of
//! `register`, `tiled` (the adapter's default configuration), `tiled_bk8`, `tiled_bk16` (the
//! tiled kernel with `TiledConfig { bk }`) and, on CUDA, `cublas`; unset, all of them.

use vramkit::kernels::{MatmulKernel, TiledConfig};

/// Every variant by its name in bench ids (`vramkit_<name>`).
const ALL: [(&str, MatmulKernel); 5] = [
    ("cublas", MatmulKernel::Vendor),
    ("tiled", MatmulKernel::Tiled),
    ("tiled_bk8", MatmulKernel::TiledWith(TiledConfig { bk: 8 })),
    (
        "tiled_bk16",
        MatmulKernel::TiledWith(TiledConfig { bk: 16 }),
    ),
    ("register", MatmulKernel::Register),
];

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
