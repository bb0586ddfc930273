//! What the counters say, for people: the summary table, checkpoints and growth since them.

use std::fmt::Write as _;

use super::{AllocationInfo, MemoryStats};
use crate::types::Label;
use crate::types::MemoryKind;

pub(crate) use crate::types::units::bytes;

/// Live allocations grouped by (label, tag, kind): count and bytes, largest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelTotal {
    /// The label.
    pub label: Label,
    /// The tag, if any.
    pub tag: Option<Label>,
    /// The memory kind.
    pub kind: MemoryKind,
    /// Allocations.
    pub count: usize,
    /// Bytes asked for.
    pub bytes: u64,
}

pub(crate) fn by_label(live: &[AllocationInfo]) -> Vec<LabelTotal> {
    let mut totals: Vec<LabelTotal> = Vec::new();
    for a in live {
        match totals
            .iter_mut()
            .find(|t| t.label == a.label && t.tag == a.tag && t.kind == a.kind)
        {
            Some(t) => {
                t.count += 1;
                t.bytes += a.size;
            }
            None => totals.push(LabelTotal {
                label: a.label.clone(),
                tag: a.tag.clone(),
                kind: a.kind,
                count: 1,
                bytes: a.size,
            }),
        }
    }
    totals.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.label.cmp(&b.label)));
    totals
}

/// A point to measure growth from: see [`Observe::checkpoint`](crate::observe::Observe::checkpoint).
#[derive(Clone, Debug)]
pub struct Checkpoint {
    pub(crate) context: u32,
    /// Allocations made before it.
    pub(crate) seq: u64,
    /// The counters then.
    pub stats: MemoryStats,
}

/// What was allocated after a [`Checkpoint`] and is still alive: see
/// [`Observe::growth_since`](crate::observe::Observe::growth_since).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Growth {
    /// Bytes asked for by those allocations.
    pub bytes: u64,
    /// How many there are.
    pub allocations: usize,
    /// By label, largest first.
    pub by_label: Vec<LabelTotal>,
    /// Change of `in_use` since the checkpoint (releases of older allocations count against it).
    pub in_use_delta: i64,
    /// Change of `reserved` since the checkpoint.
    pub reserved_delta: i64,
}

impl Growth {
    /// Whether nothing allocated since the checkpoint is still alive.
    pub fn is_empty(&self) -> bool {
        self.allocations == 0
    }
}

impl std::fmt::Display for Growth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} allocation(s), {} still alive since the checkpoint (in use {:+} B, reserved {:+} B)",
            self.allocations,
            bytes(self.bytes),
            self.in_use_delta,
            self.reserved_delta
        )?;
        for t in &self.by_label {
            write!(
                f,
                "\n  {:>10}  {} × `{}`{} ({:?})",
                bytes(t.bytes),
                t.count,
                t.label,
                t.tag.as_ref().map_or(String::new(), |g| format!(" [{g}]")),
                t.kind
            )?;
        }
        Ok(())
    }
}

/// The table of [`Observe::summary`](crate::observe::Observe::summary).
pub(crate) fn summary(device: &str, s: &MemoryStats, live: &[AllocationInfo]) -> String {
    let mut out = String::new();
    let rule = "-".repeat(100);
    let _ = writeln!(out, "vramkit memory summary: {device}");
    let _ = writeln!(
        out,
        "budget {} | reserved {} (peak {}, staging {}) | in use {} (peak {}) | requested {} \
         (peak {}) | pending release {}",
        s.budget.map_or("none".into(), bytes),
        bytes(s.reserved),
        bytes(s.peak_reserved),
        bytes(s.staging),
        bytes(s.in_use),
        bytes(s.peak_in_use),
        bytes(s.requested),
        bytes(s.peak_requested),
        bytes(s.pending_release),
    );
    let _ = writeln!(
        out,
        "{} live | {} allocated | {} released | {} over budget | {} out of memory",
        s.live, s.allocations, s.releases, s.over_budget_errors, s.out_of_memory_errors
    );
    let _ = writeln!(out, "{rule}");
    let _ = writeln!(
        out,
        "{:<9} {:>11} {:>11} {:>11} {:>11} {:>7} {:>9} {:>9} {:>6} {:>5} {:>6}",
        "kind",
        "requested",
        "in use",
        "reserved",
        "peak resv",
        "blocks",
        "allocs",
        "frees",
        "frag",
        "over",
        "oom"
    );
    for kind in MemoryKind::ALL {
        let k = s.kind(kind);
        if k.reserved == 0 && k.allocated == 0 && k.peak_reserved == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{:<9} {:>11} {:>11} {:>11} {:>11} {:>7} {:>9} {:>9} {:>6.2} {:>5} {:>6}",
            format!("{kind:?}"),
            bytes(k.requested),
            bytes(k.in_use),
            bytes(k.reserved),
            bytes(k.peak_reserved),
            k.blocks,
            k.allocated,
            k.released,
            k.fragmentation(),
            k.over_budget_errors,
            k.out_of_memory_errors
        );
    }
    if !s.tags.is_empty() {
        let _ = writeln!(out, "{rule}");
        let _ = writeln!(
            out,
            "{:<20} {:>11} {:>11} {:>11} {:>7} {:>9} {:>9}",
            "tag", "requested", "in use", "peak in use", "live", "allocs", "frees"
        );
        for t in &s.tags {
            let _ = writeln!(
                out,
                "{:<20} {:>11} {:>11} {:>11} {:>7} {:>9} {:>9}",
                if t.tag.is_empty() {
                    "(untagged)"
                } else {
                    &t.tag
                },
                bytes(t.requested),
                bytes(t.in_use),
                bytes(t.peak_in_use),
                t.live,
                t.allocated,
                t.released
            );
        }
    }
    let totals = by_label(live);
    if !totals.is_empty() {
        let _ = writeln!(out, "{rule}");
        let _ = writeln!(out, "largest live allocations, by label:");
        for t in totals.iter().take(20) {
            let _ = writeln!(
                out,
                "{:>11}  {:>5} × `{}`{} ({:?})",
                bytes(t.bytes),
                t.count,
                t.label,
                t.tag.as_ref().map_or(String::new(), |g| format!(" [{g}]")),
                t.kind
            );
        }
        if totals.len() > 20 {
            let _ = writeln!(out, "… and {} more labels", totals.len() - 20);
        }
    }
    out
}
