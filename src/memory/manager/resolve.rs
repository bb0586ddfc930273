//! The one place that validates a caller's range: a handle, a byte range and an access become a
//! range of a raw block, or a typed error. Kernel bindings, uploads and downloads, staging
//! copies, memory advice and the vendor matmul all go through [`Manager::resolve`]; the
//! backend's `unsafe fn`s take only what it returns (see [`crate::backend`]).

use super::Manager;
use crate::backend::Storage;
use crate::types::error::{Error, Result};
use crate::types::{BackendLimits, MemoryKind};
use crate::BufferHandle;

/// What the caller will do with the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Host reads or writes of any bytes of the allocation (its requested size).
    Bytes,
    /// Device copies of whole 4-byte words: a word-aligned start, a whole number of words,
    /// ending at most at the allocation's last word (the padding past its requested size up to
    /// the next word belongs to it).
    Words,
    /// A kernel binding: as [`Words`](Self::Words), non-empty, its start a multiple of the
    /// offset alignment and its size at most the largest binding.
    Bind,
    /// Memory advice over a [`MemoryKind::Unified`] allocation.
    Advise,
}

/// A validated range of a raw block.
#[derive(Debug)]
pub(crate) struct Resolved<'a, Blk> {
    pub block: &'a Blk,
    /// Start in the block.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// The allocation's memory kind.
    pub kind: MemoryKind,
    /// The last submission that uses the allocation.
    pub last_use: u64,
}

const WORD: u64 = 4;

impl<B: Storage> Manager<B> {
    /// Checks `len` bytes at `offset` of the allocation behind `h` for `access` and returns
    /// where they lie in its block. `len` of `None` runs to the allocation's end (for
    /// [`Access::Words`] and [`Access::Bind`], its last word's end).
    ///
    /// # Errors
    /// [`Error::StaleHandle`]; [`Error::InvalidRange`] for a range past the allocation or
    /// misaligned for the access; [`Error::TooLarge`] for a binding past the largest one;
    /// [`Error::InvalidParameter`] for advice on memory of another kind; [`Error::Internal`]
    /// if the allocation's place is not inside its block (a vramkit bug).
    pub fn resolve(
        &self,
        h: BufferHandle,
        offset: u64,
        len: Option<u64>,
        access: Access,
        limits: &BackendLimits,
    ) -> Result<Resolved<'_, B::Block>> {
        let a = self.get(h)?;
        let end = match access {
            Access::Bytes | Access::Advise => a.requested,
            // The unit rounds every placement up to at least a word.
            Access::Words | Access::Bind => a.requested.next_multiple_of(WORD),
        };
        let size = len.unwrap_or(end.saturating_sub(offset));
        let bad = |reason| Error::InvalidRange {
            label: a.label.to_string(),
            offset,
            len: size,
            size: a.requested,
            reason,
        };
        if offset.checked_add(size).is_none_or(|e| e > end) {
            return Err(bad(match access {
                Access::Bind => "the binding ends past the allocation; bind a range inside it",
                _ => "the range ends past the allocation; transfer fewer bytes or allocate more",
            }));
        }
        match access {
            Access::Bytes => {}
            Access::Words => {
                if !offset.is_multiple_of(WORD) || !size.is_multiple_of(WORD) {
                    return Err(Error::Internal {
                        message: format!(
                            "a device copy of `{}` at {offset}+{size} is not word-aligned",
                            a.label
                        ),
                    });
                }
            }
            Access::Bind => {
                if !offset.is_multiple_of(limits.offset_alignment) {
                    return Err(bad(
                        "a binding's offset must be a multiple of the device's offset \
                         alignment (BackendLimits::offset_alignment, 256 on most GPUs)",
                    ));
                }
                if size == 0 {
                    return Err(Error::ZeroSize {
                        label: a.label.to_string(),
                    });
                }
                if !size.is_multiple_of(WORD) {
                    return Err(bad("bind a whole number of 4-byte words"));
                }
                if size > limits.max_binding_size {
                    return Err(Error::TooLarge {
                        label: a.label.to_string(),
                        requested: size,
                        max: limits.max_binding_size,
                        unit: "bytes",
                        what: "largest range one kernel binding may cover; bind it in parts",
                    });
                }
            }
            Access::Advise => {
                if a.kind != MemoryKind::Unified {
                    return Err(Error::InvalidParameter {
                        name: "advise",
                        value: format!("advice on `{}`, a {:?} allocation", a.label, a.kind),
                        reason: "memory advice applies to MemoryKind::Unified allocations",
                    });
                }
            }
        }
        let block = self.pools[a.kind.index()]
            .block(a.placement.block)
            .ok_or_else(|| Error::Internal {
                message: format!("allocation `{}` lost its block", a.label),
            })?;
        let at = a.placement.offset + offset;
        if offset + size > a.placement.size || at + size > block.size {
            return Err(Error::Internal {
                message: format!(
                    "`{}`: bytes {at}..{} lie outside its place ({}+{}) or its block ({})",
                    a.label,
                    at + size,
                    a.placement.offset,
                    a.placement.size,
                    block.size
                ),
            });
        }
        Ok(Resolved {
            block: &block.raw,
            offset: at,
            size,
            kind: a.kind,
            last_use: a.last_use,
        })
    }
}
