//! Collective operations' vocabulary.

/// How [`NcclGroup::all_reduce`](crate::devices::NcclGroup::all_reduce) combines the ranks' values, element by element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The largest.
    Max,
    /// The smallest.
    Min,
    /// The mean (the sum divided by the number of ranks).
    Avg,
}
