//! What the f32 and f16 matmuls ([`matmul_with`](super::matmul_with),
//! [`matmul_typed`](super::matmul_typed)) share: before they launch anything, the operands'
//! checks and the bands of rows that keep every binding within the device's limit; after, the
//! submission of their last launch.

use super::MatmulDims;
use vramkit::backend::Backend;
use vramkit::{BufferHandle, Context, SubmissionIndex};
use vramkit::{Error, Result};

/// Rows per band are a multiple of this: the tiled and cooperative kernels' block height, and
/// enough to keep every band's byte offset a multiple of 256 for any K (2 or 4 bytes a value).
pub(super) const BAND_ROWS: u64 = 128;

/// Checks that `d` has no zero side, that A (`m×k`) and B (`k×n`) hold values of `elem` bytes
/// and C (`m×n`) f32 values, and that C is neither A nor B.
///
/// # Errors
/// [`Error::ShapeMismatch`] for a zero side or a buffer smaller than its matrix;
/// [`Error::InvalidParameter`] if C is A or B.
pub(super) fn check_operands<B: Backend>(
    ctx: &Context<B>,
    [a, b, c]: [BufferHandle; 3],
    d: MatmulDims,
    elem: u64,
) -> Result<()> {
    if d.m == 0 || d.n == 0 || d.k == 0 {
        return Err(Error::ShapeMismatch {
            expected: "dimensions of at least 1".into(),
            actual: format!("{d:?}"),
        });
    }
    let (m, n, k) = (u64::from(d.m), u64::from(d.n), u64::from(d.k));
    check_size(ctx, a, "A", [m, k, elem])?;
    check_size(ctx, b, "B", [k, n, elem])?;
    check_size(ctx, c, "C", [m, n, 4])?;
    for (what, operand) in [("A", a), ("B", b)] {
        if operand == c {
            return Err(Error::InvalidParameter {
                name: "matmul output",
                value: format!("C is the same allocation as {what}"),
                reason: "matmul cannot run in place (C is written while A and B are still \
                         read): give C an allocation of its own",
            });
        }
    }
    Ok(())
}

/// Checks that `h` holds a `rows × cols` matrix of `size`-byte values.
fn check_size<B: Backend>(
    ctx: &Context<B>,
    h: BufferHandle,
    what: &str,
    [rows, cols, size]: [u64; 3],
) -> Result<()> {
    let have = ctx.observe().size_of(h)?;
    // Both are below 2³², so the product is below 2⁶⁴; its bytes may not be.
    let elems = rows * cols;
    let ty = if size == 2 { "f16" } else { "f32" };
    match elems.checked_mul(size) {
        Some(need) if have >= need => Ok(()),
        need => Err(Error::ShapeMismatch {
            expected: format!(
                "{what} ({rows}×{cols}) of at least {elems} {ty} values ({} bytes)",
                need.map_or_else(|| "more than 2⁶⁴".into(), |n| n.to_string())
            ),
            actual: format!("a buffer of {have} bytes"),
        }),
    }
}

/// How a matmul binds its operands within bindings of at most `max` bytes.
pub(super) struct Bands {
    /// Bytes of B, bound whole, to its last whole word.
    pub(super) b_bytes: u64,
    /// Rows of A and C per band: all of them when they fit one binding, else a multiple of
    /// [`BAND_ROWS`].
    pub(super) rows: u64,
}

/// The bands of a matmul of `d` with A and B of `elem`-byte values (checked by
/// [`check_operands`]) and an f32 C.
///
/// # Errors
/// [`Error::TooLarge`] when B, or a band of [`BAND_ROWS`] rows of A or C, passes `max`.
pub(super) fn bands(d: MatmulDims, elem: u64, max: u64) -> Result<Bands> {
    let (m, n, k) = (u64::from(d.m), u64::from(d.n), u64::from(d.k));
    // Checked: k·n·elem ≤ the size of B, which is below 2⁶⁴.
    let b_bytes = (k * n * elem).next_multiple_of(4);
    if b_bytes > max {
        return Err(Error::TooLarge {
            label: "matmul B".into(),
            requested: b_bytes,
            max,
            unit: "bytes",
            what: "largest range one matmul binding may cover (B is bound whole)",
        });
    }
    let per_row = (elem * k).max(4 * n);
    let rows = if m * per_row <= max {
        m
    } else {
        (max / per_row / BAND_ROWS * BAND_ROWS).max(BAND_ROWS)
    };
    if rows * per_row > max {
        return Err(Error::TooLarge {
            label: "matmul A/C band".into(),
            requested: rows * per_row,
            max,
            unit: "bytes",
            what: "largest range one matmul binding may cover (128 rows of A or C)",
        });
    }
    Ok(Bands { b_bytes, rows })
}

/// The submission of a matmul's last launch. `check_operands` refused a zero dimension, so
/// there was at least one band and one slice of K; `None` is still an error, not a panic.
pub(crate) fn last_launch(last: Option<SubmissionIndex>) -> Result<SubmissionIndex> {
    last.ok_or_else(|| Error::ShapeMismatch {
        expected: "matrices of at least one row, column and K value".into(),
        actual: "no launch".into(),
    })
}
