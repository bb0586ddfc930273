//! The timeline: a bounded log of memory events with timestamps, exported as Chrome trace-event
//! JSON (Perfetto, chrome://tracing) and plotted as SVG with feature `trace-export`
//! (`trace_export`). See [`Observe::start_trace`](crate::observe::Observe::start_trace).

use std::sync::Mutex;
use std::time::Duration;

use crate::types::Label;
use crate::types::MemoryKind;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// An allocation was made.
    Alloc,
    /// An allocation was released (its memory returns after pending work).
    Release,
    /// A block was taken from the device.
    BlockGrow,
    /// A block was given back to the device (trim, the release threshold, or a block that
    /// compaction emptied).
    BlockTrim,
    /// A compaction pass moved allocations (`bytes`: bytes moved); in-use bytes do not change.
    Compact,
    /// A staging buffer was taken from the device.
    StagingGrow,
    /// A staging buffer was given back.
    StagingTrim,
    /// Bytes were written into an allocation (through staging unless it is unified).
    Upload,
    /// Bytes were read back from an allocation.
    Download,
    /// A request was refused for the budget.
    OverBudget,
    /// The driver had no memory for a request.
    OutOfMemory,
}

impl EventKind {
    /// A short name, as in the exported trace.
    pub fn name(self) -> &'static str {
        match self {
            Self::Alloc => "alloc",
            Self::Release => "release",
            Self::BlockGrow => "block grow",
            Self::BlockTrim => "block trim",
            Self::Compact => "compact",
            Self::StagingGrow => "staging grow",
            Self::StagingTrim => "staging trim",
            Self::Upload => "upload",
            Self::Download => "download",
            Self::OverBudget => "over budget",
            Self::OutOfMemory => "out of memory",
        }
    }
}

/// One entry of the timeline, with the counters right after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since tracing started, to about 0.1 ms (see
    /// [`Observe::start_trace`](crate::observe::Observe::start_trace)).
    pub at_ns: u64,
    /// What happened.
    pub what: EventKind,
    /// The memory kind it concerns.
    pub kind: MemoryKind,
    /// Bytes asked for, released, or taken/given back.
    pub bytes: u64,
    /// The allocation's label (empty for blocks and staging).
    pub label: Label,
    /// Bytes in use in this kind after the event.
    pub kind_in_use: u64,
    /// Bytes reserved in this kind after the event.
    pub kind_reserved: u64,
    /// Bytes in use in all kinds after the event.
    pub in_use: u64,
    /// Bytes reserved in all kinds after the event.
    pub reserved: u64,
}

/// How often the clock thread refreshes the time events are stamped with.
const TICK: Duration = Duration::from_millis(1);

/// The clock thread (quanta's upkeep), shared by every recorder in the process: reading a clock
/// costs 17–60 ns on virtual machines, a third of an alloc + release pair, while reading the
/// time the thread last stored costs a load. Events are stamped to ~[`TICK`]; their order is
/// exact.
static CLOCK_THREAD: Mutex<(usize, Option<quanta::Handle>)> = Mutex::new((0, None));

fn clock_thread(start: bool) {
    let mut t = crate::types::lock(&CLOCK_THREAD);
    if start {
        if t.0 == 0 {
            // Err: another part of the process runs the upkeep thread already; use it.
            t.1 = quanta::Upkeep::new(TICK).start().ok();
        }
        t.0 += 1;
    } else {
        t.0 = t.0.saturating_sub(1);
        if t.0 == 0 {
            // Dropping the handle stops the thread.
            t.1 = None;
        }
    }
}

/// One event as recorded: the counters after it are rebuilt on export by replaying the deltas
/// from the counters when the oldest kept event happened, so recording stays a few stores.
struct Raw {
    at: quanta::Instant,
    bytes: u64,
    /// Change of in-use (allocations) or reserved (blocks, staging) bytes of `kind`.
    delta: i64,
    label: Label,
    what: EventKind,
    kind: MemoryKind,
}

impl Raw {
    /// Applies the event to per-kind (in use, reserved) counters.
    fn apply(&self, c: &mut [(u64, u64); MemoryKind::COUNT]) {
        let k = &mut c[self.kind.index()];
        let field = match self.what {
            EventKind::Alloc | EventKind::Release => &mut k.0,
            _ => &mut k.1,
        };
        *field = field.wrapping_add_signed(self.delta);
    }
}

/// The recorder inside the memory manager.
pub(crate) struct Recorder {
    start: quanta::Instant,
    capacity: usize,
    /// A ring once full: `head` is the oldest event.
    events: Vec<Raw>,
    head: usize,
    dropped: u64,
    /// Per-kind (in use, reserved) before the oldest kept event.
    base: [(u64, u64); MemoryKind::COUNT],
}

impl Recorder {
    /// A recorder whose counters start at `base`: per kind, (in use, reserved).
    pub fn new(capacity: usize, base: [(u64, u64); MemoryKind::COUNT]) -> Self {
        clock_thread(true);
        Self {
            start: quanta::Instant::recent(),
            capacity: capacity.max(1),
            events: Vec::with_capacity(capacity.clamp(1, 1 << 16)),
            head: 0,
            dropped: 0,
            base,
        }
    }

    /// Records an event stamped now; `delta` changes the kind's in-use bytes (alloc, release)
    /// or reserved bytes (blocks, staging).
    #[inline(always)]
    pub fn push(
        &mut self,
        what: EventKind,
        kind: MemoryKind,
        bytes: u64,
        delta: i64,
        label: Label,
    ) {
        let raw = Raw {
            at: quanta::Instant::recent(),
            bytes,
            delta,
            label,
            what,
            kind,
        };
        if self.events.len() < self.capacity {
            self.events.push(raw);
        } else {
            let old = std::mem::replace(&mut self.events[self.head], raw);
            old.apply(&mut self.base);
            self.head += 1;
            if self.head == self.capacity {
                self.head = 0;
            }
            self.dropped += 1;
        }
    }

    /// The events so far, oldest first, with the counters after each.
    pub fn trace(&self, budget: Option<u64>, device: String) -> Trace {
        let (newer, older) = self.events.split_at(self.head);
        let mut c = self.base;
        let events = older
            .iter()
            .chain(newer)
            .map(|r| {
                r.apply(&mut c);
                let (kind_in_use, kind_reserved) = c[r.kind.index()];
                Event {
                    at_ns: r.at.saturating_duration_since(self.start).as_nanos() as u64,
                    what: r.what,
                    kind: r.kind,
                    bytes: r.bytes,
                    label: r.label.clone(),
                    kind_in_use,
                    kind_reserved,
                    in_use: c.iter().map(|k| k.0).sum(),
                    reserved: c.iter().map(|k| k.1).sum(),
                }
            })
            .collect();
        Trace {
            events,
            dropped: self.dropped,
            budget,
            device,
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        clock_thread(false);
    }
}

/// A copy of the timeline: see [`Observe::trace`](crate::observe::Observe::trace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Events, oldest first.
    pub events: Vec<Event>,
    /// Older events the bounded log let go.
    pub dropped: u64,
    /// The context's budget.
    pub budget: Option<u64>,
    /// The device, for titles.
    pub device: String,
}
