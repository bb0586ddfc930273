//! The matmul tests' check of a result against the f64 product.

/// Asserts that `c` is `a · b` (f32, row-major, `d`) within the f32 accumulation bound of K
/// products: K·ε·Σ|a·b| of the f64 product, with a factor 2 of slack for fused and unfused
/// multiply-adds.
pub fn assert_matmul_close(
    c: &[f32],
    a: &[f32],
    b: &[f32],
    d: vramkit_kernels::MatmulDims,
    what: &str,
) {
    let reference = vramkit_kernels::matmul_cpu(a, b, d);
    assert_eq!(c.len(), reference.len(), "{what} {d:?}: C's length");
    let (n, k) = (d.n as usize, d.k as usize);
    for (idx, (&got, &want)) in c.iter().zip(&reference).enumerate() {
        let (i, j) = (idx / n, idx % n);
        let abs: f64 = (0..k)
            .map(|p| f64::from((a[i * k + p] * b[p * n + j]).abs()))
            .sum();
        let tol = 2.0 * k as f64 * f64::from(f32::EPSILON) * abs + 1e-30;
        assert!(
            (f64::from(got) - f64::from(want)).abs() <= tol,
            "{what} {d:?}: C[{i}][{j}] = {got}, expected {want} (tolerance {tol:e})"
        );
    }
}
