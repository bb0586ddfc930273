//! The CUDA twins read 8- and 16-bit channels as `x / 255` and `x / 65535` without a division
//! (`unorm` in vramkit's `CUDA_PRELUDE`: the product with the reciprocal, corrected by one
//! fused multiply-add). This checks, for every input, that the formula gives the correctly
//! rounded quotient, the value WGSL's `unpack4x8unorm` and the CPU twins give.

/// `x / d` as `common.cuh` computes it (f32 `mul_add` is IEEE fused, as CUDA's `fmaf`).
fn unorm(x: u32, d: f32) -> f32 {
    let (x, r) = (x as f32, 1.0 / d);
    let q = x * r;
    (-q).mul_add(d, x).mul_add(r, q)
}

#[test]
fn the_fma_corrected_quotient_is_exact_for_every_channel_value() {
    for (d, n) in [(255.0f32, 1u32 << 8), (65535.0, 1 << 16)] {
        let plain = (0..n)
            .filter(|&x| x as f32 * (1.0 / d) != x as f32 / d)
            .count();
        assert!(
            plain > 0,
            "the uncorrected product is already exact for {d}: test the test"
        );
        for x in 0..n {
            assert_eq!(unorm(x, d).to_bits(), (x as f32 / d).to_bits(), "{x} / {d}");
        }
    }
}
