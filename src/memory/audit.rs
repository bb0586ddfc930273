//! [`AuditReport`]: the counters recounted from scratch, as PyTorch's memory-stat consistency
//! check, and the pools' layout re-derived. See [`Observe::audit`](crate::observe::Observe::audit).

use std::fmt;

use super::{AllocationInfo, MemoryStats};
use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

/// A counter whose kept value disagrees with a recount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterMismatch {
    /// Which counter, e.g. `"Device in use"` or ``"tag `weights` live"``.
    pub counter: String,
    /// The value the context keeps.
    pub kept: u64,
    /// The value recounted from the live allocations and blocks.
    pub recounted: u64,
}

/// What [`Observe::audit`](crate::observe::Observe::audit) found. Clean unless vramkit has a bug.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// Counters that disagree with a recount.
    pub mismatches: Vec<CounterMismatch>,
    /// Faults in the pools' layout: chunks that do not tile their block, free ranges not
    /// coalesced or not indexed, allocations not where their ranges are.
    pub layout: Vec<String>,
}

impl AuditReport {
    /// Whether everything agrees.
    pub fn is_clean(&self) -> bool {
        self.mismatches.is_empty() && self.layout.is_empty()
    }

    /// `Ok` when clean, else [`Error::Internal`] with the report.
    ///
    /// # Errors
    /// [`Error::Internal`] listing what disagrees.
    pub fn check(&self) -> Result<()> {
        if self.is_clean() {
            return Ok(());
        }
        Err(Error::Internal {
            message: format!("the memory manager's audit failed: {self}"),
        })
    }

    pub(crate) fn recount(
        s: &MemoryStats,
        live: &[AllocationInfo],
        held: &[(u64, usize); MemoryKind::COUNT],
        layout: Option<String>,
    ) -> Self {
        let mut report = AuditReport {
            mismatches: Vec::new(),
            layout: layout.into_iter().collect(),
        };
        let mut check = |counter: String, kept: u64, recounted: u64| {
            if kept != recounted {
                report.mismatches.push(CounterMismatch {
                    counter,
                    kept,
                    recounted,
                });
            }
        };
        let sum = |f: &dyn Fn(&AllocationInfo) -> bool, g: &dyn Fn(&AllocationInfo) -> u64| {
            live.iter().filter(|a| f(a)).map(g).sum::<u64>()
        };
        let count = |f: &dyn Fn(&AllocationInfo) -> bool| live.iter().filter(|a| f(a)).count();
        check("requested".into(), s.requested, sum(&|_| true, &|a| a.size));
        check("in use".into(), s.in_use, sum(&|_| true, &|a| a.reserved));
        check("live".into(), s.live as u64, live.len() as u64);
        check(
            "reserved".into(),
            s.reserved,
            held.iter().map(|h| h.0).sum(),
        );
        check(
            "allocations - releases".into(),
            s.allocations - s.releases,
            live.len() as u64,
        );
        for kind in MemoryKind::ALL {
            let k = s.kind(kind);
            let of = |a: &AllocationInfo| a.kind == kind;
            check(
                format!("{kind:?} requested"),
                k.requested,
                sum(&of, &|a| a.size),
            );
            check(
                format!("{kind:?} in use"),
                k.in_use,
                sum(&of, &|a| a.reserved),
            );
            check(
                format!("{kind:?} live"),
                k.allocations as u64,
                count(&of) as u64,
            );
            check(
                format!("{kind:?} reserved"),
                k.reserved,
                held[kind.index()].0,
            );
            check(
                format!("{kind:?} blocks"),
                k.blocks as u64,
                held[kind.index()].1 as u64,
            );
            check(
                format!("{kind:?} allocated - released"),
                k.allocated - k.released,
                k.allocations as u64,
            );
        }
        for t in &s.tags {
            let of = |a: &AllocationInfo| a.tag.as_deref().unwrap_or("") == t.tag;
            check(
                format!("tag `{}` requested", t.tag),
                t.requested,
                sum(&of, &|a| a.size),
            );
            check(
                format!("tag `{}` in use", t.tag),
                t.in_use,
                sum(&of, &|a| a.reserved),
            );
            check(
                format!("tag `{}` live", t.tag),
                t.live as u64,
                count(&of) as u64,
            );
        }
        report
    }
}

impl fmt::Display for AuditReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_clean() {
            return f.write_str("every counter agrees with a recount; the layout is sound");
        }
        let mut parts: Vec<String> = self
            .mismatches
            .iter()
            .map(|m| format!("{}: kept {}, recounted {}", m.counter, m.kept, m.recounted))
            .collect();
        parts.extend(self.layout.iter().cloned());
        f.write_str(&parts.join("; "))
    }
}
