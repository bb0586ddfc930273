//! What to allocate ([`AllocDesc`]) and what is known of a live allocation
//! ([`AllocationInfo`]).

use crate::types::{Label, MemoryKind};

/// What to allocate.
///
/// ```
/// use vramkit::{AllocDesc, MemoryKind};
/// let desc = AllocDesc::new("weights", 1 << 20).kind(MemoryKind::Device).uninit();
/// assert!(!desc.zeroed);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocDesc {
    /// A label for reports and errors. A `&'static str` is stored without a copy.
    pub label: Label,
    /// Bytes to allocate (at least 1).
    pub size: u64,
    /// Where the memory lives: [`MemoryKind::Device`] (default) or [`MemoryKind::Unified`].
    pub kind: MemoryKind,
    /// Whether the memory must read as zeros (default). Reused memory is then cleared on the
    /// device before it is handed out.
    pub zeroed: bool,
    /// A group for statistics and reports, e.g. `"weights"`, `"activations"`, `"frames"`.
    pub tag: Option<Label>,
    /// Whether compaction may move it (default). See [`AllocDesc::immovable`].
    pub movable: bool,
}

impl AllocDesc {
    /// `size` bytes of zeroed device memory.
    pub fn new(label: impl Into<Label>, size: u64) -> Self {
        Self {
            label: label.into(),
            size,
            kind: MemoryKind::Device,
            zeroed: true,
            tag: None,
            movable: true,
        }
    }

    /// Keeps the allocation where it is: compaction moves other allocations around it. Use it
    /// when something outside vramkit holds the allocation's address (a raw device pointer or
    /// a buffer binding handed to other code). Movable allocations stay valid through their
    /// handles wherever they move.
    pub fn immovable(mut self) -> Self {
        self.movable = false;
        self
    }

    /// Sets the tag: statistics, [`observe().summary`](crate::observe::Observe::summary), growth and leak reports
    /// total allocations by tag.
    pub fn tag(mut self, tag: impl Into<Label>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Sets the memory kind.
    pub fn kind(mut self, kind: MemoryKind) -> Self {
        self.kind = kind;
        self
    }

    /// Skips clearing reused memory: its first contents are undefined. Use it only when every
    /// byte is written before it is read.
    pub fn uninit(mut self) -> Self {
        self.zeroed = false;
        self
    }
}

/// Where a live allocation sits. See [`Observe::allocation_info`](crate::observe::Observe::allocation_info).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocationInfo {
    /// Its label.
    pub label: Label,
    /// Its tag, if it has one.
    pub tag: Option<Label>,
    /// Its memory kind.
    pub kind: MemoryKind,
    /// Bytes asked for.
    pub size: u64,
    /// Bytes held (rounded up to the offset alignment).
    pub reserved: u64,
    /// An id of the block it lives in, unique among the context's live blocks of that kind.
    pub block: u64,
    /// Byte offset inside the block.
    pub offset: u64,
    /// Whether it fills its block.
    pub dedicated: bool,
    /// Whether compaction may move it.
    pub movable: bool,
    /// Where it was allocated: a backtrace, in leak reports
    /// ([`Observe::leaks`](crate::observe::Observe::leaks)) with
    /// [`DebugSettings::backtraces`](crate::DebugSettings::backtraces).
    pub allocated_at: Option<String>,
}
