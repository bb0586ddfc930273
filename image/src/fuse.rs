//! Which ops of a chain run inside their neighbours' kernels. A chain on 8-bit frames that
//! opens with `linear` and closes with `srgb` (the 4K tool's default,
//! `linear,blur,resize,srgb`) needs neither as a kernel of its own: the first filter reads the
//! uploaded frame as sRGB-encoded RGBA8 ([`PixelFormat::Srgba8`]: decoded to linear light as
//! it is read) and the last filter writes the frame to download as sRGB-encoded RGBA8 (encoded
//! as it is written). That also drops the conversions between the 8-bit edges and the RGBA32F
//! stages, so the default chain runs as three kernels (blur's two passes, resize) instead of
//! seven (five with an RGBA8 working format), two with the fusion below. Each pixel sees the same operations in the same
//! order; only the compiler's contraction of multiply-adds may differ between kernels, so
//! outputs agree within one level (tests/fused_ends.rs). The planner still counts the unfused
//! stages, a bound on the fused run's buffers (a subset of them).
//!
//! A blur followed by an exact 2× area downscale (the default chain's `blur`, `resize:W/2xH/2:area`)
//! runs as one [`blur_area2`](vramkit_kernels::image::blur_area2): the blur's vertical pass writes
//! the downscaled frame, so the blurred full-size frame is never written nor read, and the
//! blur's intermediate holds f16 for 8-bit sources (within half a level of the f32 one). The
//! RGBA32F working format promises f32 throughout, so there it runs only from RGBA32F inputs.

use super::{Op, Pipeline};
use vramkit_kernels::image::{blur_area2_formats, Blur, PixelFormat, ResizeFilter};

/// The chain's ends that run fused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct FusedEnds {
    /// The leading `linear` runs in the next op, which reads the input as `Srgba8`.
    pub first: bool,
    /// The trailing `srgb` runs in the op before it, which writes the output as `Srgba8`.
    pub last: bool,
}

/// Ops with kernels from and to `Srgba8` (RGBA32F on the other side).
fn filter(op: &Op) -> bool {
    matches!(op, Op::Blur { .. } | Op::BoxBlur { .. } | Op::Resize { .. })
}

impl Pipeline {
    /// Which ends run fused: only on RGBA8 edges (16-bit frames keep their precision), and
    /// only where the neighbour filters RGBA32F on its other side (its kernels exist for
    /// `Srgba8` ↔ RGBA32F, not `Srgba8` → `Srgba8`).
    pub(super) fn fused_ends(&self) -> FusedEnds {
        let (ops, n) = (&self.ops, self.ops.len());
        if self.edge != PixelFormat::Rgba8 || n < 2 {
            return FusedEnds::default();
        }
        let f = self.stage_formats();
        let first = ops[0] == Op::Linear && filter(&ops[1]) && f[2] == PixelFormat::Rgba32F;
        let last = ops[n - 1] == Op::Srgb
            && filter(&ops[n - 2])
            && f[n - 2] == PixelFormat::Rgba32F
            && !(first && n - 2 == 1);
        FusedEnds { first, last }
    }
}

impl Pipeline {
    /// The blur of op `i` when it and op `i + 1` (an area resize to exactly half of each side)
    /// run as one `blur_area2` from `src` into `dst`, the formats its input and the resize's
    /// output have in the run. With the RGBA32F working format (full precision) only from an
    /// RGBA32F input: from an 8-bit one `blur_area2` keeps its intermediate in f16, which
    /// misrounds some outputs, so the blur and the resize run as their own kernels.
    pub(super) fn area2_at(&self, i: usize, src: PixelFormat, dst: PixelFormat) -> Option<Blur> {
        if self.working == PixelFormat::Rgba32F && src != PixelFormat::Rgba32F {
            return None;
        }
        let blur = match self.ops.get(i)? {
            Op::Blur { sigma } => Blur::Gaussian { sigma: *sigma },
            Op::BoxBlur { radius } => Blur::Box { radius: *radius },
            _ => return None,
        };
        let area = matches!(
            self.ops.get(i + 1)?,
            Op::Resize {
                filter: ResizeFilter::Area,
                ..
            }
        );
        let (&[w, h], &[dw, dh]) = (self.sizes.get(i + 1)?, self.sizes.get(i + 2)?);
        let halves = u64::from(w) == 2 * u64::from(dw) && u64::from(h) == 2 * u64::from(dh);
        (area && halves && blur_area2_formats(src, dst)).then_some(blur)
    }
}

#[cfg(test)]
mod tests {
    use super::FusedEnds;
    use crate::{parse_chain, Pipeline, PixelFormat};

    fn ends(chain: &str, working: PixelFormat) -> FusedEnds {
        let p = Pipeline::new(parse_chain(chain).expect("chain"), [64, 48]).expect("pipeline");
        p.with_working_format(working).fused_ends()
    }

    #[test]
    fn the_default_chain_fuses_both_ends_in_either_working_format() {
        for working in [PixelFormat::Rgba8, PixelFormat::Rgba32F] {
            let both = FusedEnds {
                first: true,
                last: true,
            };
            assert_eq!(
                ends("linear,blur:sigma=3,resize:32x24:area,srgb", working),
                both
            );
            // One filter between them: it reads sRGB-encoded RGBA8 and writes RGBA32F, so the
            // `srgb` runs as its own kernel.
            let first = FusedEnds {
                first: true,
                last: false,
            };
            assert_eq!(ends("linear,blur:sigma=2,srgb", working), first);
        }
    }

    #[test]
    fn other_chains_run_every_op() {
        let none = FusedEnds::default();
        for chain in ["linear", "srgb", "luma,blur:sigma=2", "linear,luma,srgb"] {
            assert_eq!(ends(chain, PixelFormat::Rgba32F), none, "{chain}");
        }
        // A filter before the trailing srgb, but not after a leading linear.
        assert_eq!(
            ends("blur:sigma=2,resize:32x24,srgb", PixelFormat::Rgba32F),
            FusedEnds {
                first: false,
                last: true,
            }
        );
        // 16-bit frames keep every op (their edges are RGBA16).
        let p = Pipeline::new(
            parse_chain("linear,blur:sigma=2,resize:32x24,srgb").expect("chain"),
            [64, 48],
        )
        .expect("pipeline");
        assert_eq!(p.with_edge(PixelFormat::Rgba16).fused_ends(), none);
    }
}
