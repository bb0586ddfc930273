//! The CPU twin of the f16 matmul, IEEE binary16 conversions, and the error bound the tests
//! hold the device kernels to.
//!
//! # The tolerance
//! A product of two f16 values is exact in f32 (11-bit significands give at most 22 bits;
//! exponents from 2⁻⁴⁸ for two subnormals to 65504² < 2³², all normal in f32), so a kernel's
//! only error is the f32 summation of K exact terms. Summed in any order (sequentially, in
//! slices of K, or in the tensor cores' blocks), each addition rounds with a relative error of
//! at most u = 2⁻²⁴ — 2⁻²³ where the hardware truncates, as tensor cores may — so
//! |c − Σ aᵢbᵢ| ≤ γ·Σ|aᵢbᵢ| with γ = (K−1)·2⁻²³/(1 − (K−1)·2⁻²³) (Higham, *Accuracy and
//! Stability of Numerical Algorithms*, §3.1). For K ≤ 2²² that is below K·2⁻²², the bound
//! [`matmul_f16_bound`] returns. Every sum is a multiple of 2⁻⁴⁸, so none is subnormal in f32
//! and flushing subnormals to zero loses nothing.

#[cfg(any(test, feature = "reference"))]
use super::MatmulDims;

/// An IEEE binary16 bit pattern as f32 (exact: every f16 value is an f32 value).
///
/// ```
/// use vramkit_kernels::f16_bits_to_f32;
/// assert_eq!(f16_bits_to_f32(0x3C00), 1.0);
/// assert_eq!(f16_bits_to_f32(0xC000), -2.0);
/// assert_eq!(f16_bits_to_f32(0x7BFF), 65504.0);
/// assert_eq!(f16_bits_to_f32(0x0001), 2f32.powi(-24));
/// ```
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1F;
    let frac = u32::from(h & 0x3FF);
    match exp {
        // frac·2⁻²⁴, exact (frac < 2¹⁰).
        0 => f32::from_bits(sign | (frac as f32 * f32::from_bits(0x3380_0000)).to_bits()),
        31 if frac == 0 => f32::from_bits(sign | 0x7F80_0000),
        31 => f32::NAN,
        // Rebias the exponent (15 to 127) and widen the significand.
        e => f32::from_bits(sign | (e + 112) << 23 | frac << 13),
    }
}

/// `x` rounded to the nearest IEEE binary16 value (ties to even), as its bit pattern; values
/// past 65504 round to infinity, NaN stays NaN.
///
/// ```
/// use vramkit_kernels::{f16_bits_to_f32, f32_to_f16_bits};
/// assert_eq!(f32_to_f16_bits(1.0), 0x3C00);
/// assert_eq!(f16_bits_to_f32(f32_to_f16_bits(0.1)), 0.099975586);
/// assert_eq!(f32_to_f16_bits(1e6), 0x7C00);
/// ```
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let abs = bits & 0x7FFF_FFFF;
    if abs > 0x7F80_0000 {
        return sign | 0x7E00;
    }
    if abs >= 0x477F_F000 {
        // 65520 (halfway between 65504 and 2¹⁶) and above: ties to even give infinity.
        return sign | 0x7C00;
    }
    if abs < 0x3880_0000 {
        // Below 2⁻¹⁴: a multiple of 2⁻²⁴ in f16. Scaling by 2²⁴ is exact, and so is rounding
        // the result (below 2¹⁰) to an integer; 1024 is the smallest normal's pattern.
        let q = (f32::from_bits(abs) * 16_777_216.0).round_ties_even();
        return sign | q as u16;
    }
    // Normal: rebias the exponent (127 to 15) and round the significand from 23 bits to 10,
    // ties to even; a carry out of the significand correctly bumps the exponent.
    let h = ((abs >> 23) - 112) << 10 | (abs & 0x7F_FFFF) >> 13;
    let rest = abs & 0x1FFF;
    let h = if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h + 1
    } else {
        h
    };
    sign | h as u16
}

#[cfg(any(test, feature = "reference"))]
/// The CPU twin of the f16 matmul: `C = A·B` on row-major matrices of f16 bit patterns, the
/// exact f16 values accumulated in f64, rounded once to f32 (so it is also the reference the
/// tests compare against).
///
/// ```
/// use vramkit_kernels::{f32_to_f16_bits, matmul_f16_cpu, MatmulDims};
/// let h = |v: &[f32]| v.iter().map(|&x| f32_to_f16_bits(x)).collect::<Vec<u16>>();
/// let c = matmul_f16_cpu(&h(&[1.0, 2.0, 3.0, 4.0]), &h(&[5.0, 6.0, 7.0, 8.0]),
///                        MatmulDims { m: 2, n: 2, k: 2 });
/// assert_eq!(c, vec![19.0, 22.0, 43.0, 50.0]);
/// ```
pub fn matmul_f16_cpu(a: &[u16], b: &[u16], d: MatmulDims) -> Vec<f32> {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let b: Vec<f64> = b[..k * n]
        .iter()
        .map(|&h| f64::from(f16_bits_to_f32(h)))
        .collect();
    let mut c = vec![0f32; m * n];
    let mut row = vec![0f64; n];
    for i in 0..m {
        row.fill(0.0);
        for p in 0..k {
            let x = f64::from(f16_bits_to_f32(a[i * k + p]));
            for (r, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *r += x * y;
            }
        }
        for (out, &r) in c[i * n..(i + 1) * n].iter_mut().zip(&row) {
            *out = r as f32;
        }
    }
    c
}

#[cfg(any(test, feature = "reference"))]
/// The bound a device f16 matmul (f32 accumulation) keeps to, per element of C:
/// K·2⁻²²·Σₚ|A\[i\]\[p\]·B\[p\]\[j\]|, valid for K ≤ 2²²: a product of two f16 values is
/// exact in f32, so a kernel's only error is the f32 summation of K exact terms, each addition
/// rounding by at most 2⁻²³ (truncating tensor cores included); by Higham's bound (*Accuracy
/// and Stability of Numerical Algorithms*, §3.1) that stays below K·2⁻²² of Σ|aᵢbᵢ|.
pub fn matmul_f16_bound(a: &[u16], b: &[u16], d: MatmulDims) -> Vec<f64> {
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    let abs = |h: u16| f64::from(f16_bits_to_f32(h)).abs();
    let scale = k as f64 * 2f64.powi(-22);
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        let row = &mut out[i * n..(i + 1) * n];
        for p in 0..k {
            let x = abs(a[i * k + p]);
            for (r, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *r += x * abs(y);
            }
        }
        for r in row {
            *r *= scale;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{f16_bits_to_f32, f32_to_f16_bits};

    /// Every finite pattern against the definition: (−1)ˢ·2^(e−15)·(1 + f/2¹⁰), subnormals
    /// (−1)ˢ·2⁻²⁴·f; infinities and NaN by their patterns.
    #[test]
    fn every_f16_decodes_to_its_value() {
        for h in 0..=u16::MAX {
            let (e, f) = (i32::from((h >> 10) & 0x1F), f64::from(h & 0x3FF));
            let magnitude = match e {
                0 => f * 2f64.powi(-24),
                31 if f == 0.0 => f64::INFINITY,
                31 => {
                    assert!(f16_bits_to_f32(h).is_nan(), "{h:#06x}");
                    continue;
                }
                e => (1.0 + f / 1024.0) * 2f64.powi(e - 15),
            };
            let want = if h >> 15 == 1 { -magnitude } else { magnitude };
            assert_eq!(f64::from(f16_bits_to_f32(h)), want, "{h:#06x}");
        }
    }

    #[test]
    fn every_f16_round_trips_through_f32() {
        for h in 0..=u16::MAX {
            let x = f16_bits_to_f32(h);
            if x.is_nan() {
                assert!(f16_bits_to_f32(f32_to_f16_bits(x)).is_nan());
            } else {
                assert_eq!(f32_to_f16_bits(x), h, "{h:#06x} = {x}");
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        // Halfway between 1 and 1 + 2⁻¹⁰: to 1 (even); halfway above 1 + 2⁻¹⁰: up.
        assert_eq!(f32_to_f16_bits(1.0 + 2f32.powi(-11)), 0x3C00);
        assert_eq!(f32_to_f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02);
        // Just below the tie rounds down, just above rounds up.
        assert_eq!(
            f32_to_f16_bits(1.0 + 2f32.powi(-11) - 2f32.powi(-20)),
            0x3C00
        );
        assert_eq!(
            f32_to_f16_bits(1.0 + 2f32.powi(-11) + 2f32.powi(-20)),
            0x3C01
        );
        // Carry into the next binade, subnormals, overflow.
        assert_eq!(f32_to_f16_bits(2.0 - 2f32.powi(-12)), 0x4000);
        assert_eq!(f32_to_f16_bits(3.0 * 2f32.powi(-25)), 0x0002);
        assert_eq!(f32_to_f16_bits(2f32.powi(-26)), 0x0000);
        assert_eq!(f32_to_f16_bits(65519.0), 0x7BFF);
        assert_eq!(f32_to_f16_bits(-65520.0), 0xFC00);
    }
}
