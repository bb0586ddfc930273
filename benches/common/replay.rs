//! Real allocation traces (`benches/traces/*.trace.gz`, captured from PyTorch by
//! `benches/traces/capture.py`) replayed event by event through vramkit's public API: `alloc`
//! on each allocation, `release` on each free. Shared by `benches/replay.rs`,
//! `examples/replay.rs` and `tests/replay.rs`.
#![allow(dead_code, reason = "each user takes a part")]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error};

/// One event: an allocation of that many bytes, or the release of allocation number `i`
/// (allocations are numbered from 0 in trace order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Alloc(u64),
    Free(u32),
}

/// A trace and what PyTorch said of its own run.
pub struct Trace {
    pub name: String,
    pub ops: Vec<Op>,
    pub allocations: usize,
    /// The most bytes live at once (sum of the sizes asked for).
    pub live_peak: u64,
    /// The header's `torch` object: PyTorch's figures for the captured run.
    pub torch: serde_json::Value,
}

/// The traces stored in the repository, smallest first.
pub fn stored() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/traces");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.retain(|p| p.to_string_lossy().ends_with(".trace.gz"));
    paths.sort_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    paths
}

/// Reads a trace file (gzip'd text; see `capture.py`).
pub fn load(path: &Path) -> anyhow::Result<Trace> {
    let file = std::fs::File::open(path)?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(file));
    let (mut ops, mut sizes) = (Vec::new(), Vec::new());
    let mut header = serde_json::Value::Null;
    let (mut live, mut live_peak) = (0u64, 0u64);
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if let Some(json) = line.strip_prefix("# ") {
            header = serde_json::from_str(json)?;
            continue;
        }
        let bad = || anyhow::anyhow!("{}:{}: bad event `{line}`", path.display(), n + 1);
        let (kind, value) = line.split_once(' ').ok_or_else(bad)?;
        let value: u64 = value.parse().map_err(|_| bad())?;
        match kind {
            "a" if value > 0 => {
                ops.push(Op::Alloc(value));
                sizes.push(value);
                live += value;
                live_peak = live_peak.max(live);
            }
            "f" => {
                let size = sizes.get(value as usize).copied().ok_or_else(bad)?;
                ops.push(Op::Free(value as u32));
                live -= size;
            }
            _ => return Err(bad()),
        }
    }
    let name = header["workload"].as_str().map_or_else(
        || {
            path.file_name()
                .map_or("trace".into(), |n| n.to_string_lossy().into())
        },
        str::to_string,
    );
    Ok(Trace {
        name,
        allocations: sizes.len(),
        ops,
        live_peak,
        torch: header["torch"].clone(),
    })
}

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Whether every event ran (else `error` says what stopped it).
    pub completed: bool,
    pub error: Option<String>,
    pub peak_in_use: u64,
    pub peak_reserved: u64,
    pub block_allocations: u64,
    pub compaction_passes: u64,
    pub compaction_bytes: u64,
    pub compaction_time: Duration,
    /// Pages moved, given back and mapped again (`follow_live`, pressure).
    pub pages: vramkit::observe::PageStats,
    /// Wall time of all events, over the number of allocations.
    pub mean_per_pair: Duration,
    /// Median of each allocation's alloc + release time (timed one by one: adds the clock).
    pub median_per_pair: Option<Duration>,
}

/// Whether replays make their allocations immovable, as the C ABI's are (PyTorch holds raw
/// pointers): compaction can then move nothing.
pub static PINNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The C ABI's settings for pinned replays: no compaction before growth (nothing could move),
/// free pages following the live set, and its slack (the `slack` setting's default, 1.9 %).
pub fn pinned_desc(mut d: ContextDesc) -> ContextDesc {
    d.compaction.before_growth = false;
    d.compaction.slack_permille = 19;
    d.follow_live = true;
    d
}

/// Replays `trace` on `ctx` (a fresh context). With `timed`, also takes each pair's time.
pub fn replay<B: Backend>(ctx: &Context<B>, trace: &Trace, timed: bool) -> Outcome {
    replay_checked(ctx, trace, timed, 0)
}

/// [`replay`], auditing the context ([`Observe::audit`](crate::observe::Observe::audit): counters and layout) every `every`
/// events (0: never); a failed audit stops the replay with its report as the error.
pub fn replay_checked<B: Backend>(
    ctx: &Context<B>,
    trace: &Trace,
    timed: bool,
    every: usize,
) -> Outcome {
    let mut handles: Vec<Option<BufferHandle>> = Vec::with_capacity(trace.allocations);
    let mut pair_ns: Vec<u64> = if timed {
        Vec::with_capacity(trace.allocations)
    } else {
        Vec::new()
    };
    let mut error = None;
    let mut audit_error = None;
    let pinned = PINNED.load(std::sync::atomic::Ordering::Relaxed);
    let mut evict = Evict::from_env();
    // With eviction, the time of the calls alone; else the wall time of the whole replay.
    let mut in_calls = Duration::ZERO;
    let start = Instant::now();
    for (n, &op) in trace.ops.iter().enumerate() {
        if every > 0 && n % every == 0 {
            if let Err(e) = ctx.observe().audit().check() {
                audit_error = Some(format!("audit after {n} events: {e}"));
                break;
            }
        }
        let call = evict.touch().then(Instant::now);
        let t = timed.then(Instant::now);
        match op {
            Op::Alloc(size) => match ctx.alloc(if pinned {
                AllocDesc::new("replay", size).uninit().immovable()
            } else {
                AllocDesc::new("replay", size).uninit()
            }) {
                Ok(h) => {
                    handles.push(Some(h));
                    if let Some(t) = t {
                        pair_ns.push(t.elapsed().as_nanos() as u64);
                    }
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            },
            Op::Free(i) => {
                if let Some(h) = handles.get_mut(i as usize).and_then(Option::take) {
                    if let Err(e) = ctx.release(h) {
                        error = Some(e);
                        break;
                    }
                    if let Some(t) = t {
                        pair_ns[i as usize] += t.elapsed().as_nanos() as u64;
                    }
                }
            }
        }
        if let Some(call) = call {
            in_calls += call.elapsed();
        }
    }
    let wall = if evict.0.is_empty() {
        start.elapsed()
    } else {
        in_calls
    };
    let s = ctx.stats();
    for h in handles.into_iter().flatten() {
        let _ = ctx.release(h);
    }
    let median_per_pair = (!pair_ns.is_empty()).then(|| {
        let mid = pair_ns.len() / 2;
        Duration::from_nanos(*pair_ns.select_nth_unstable(mid).1)
    });
    Outcome {
        completed: error.is_none() && audit_error.is_none(),
        error: audit_error.or(error.map(|e: Error| e.to_string())),
        peak_in_use: s.peak_in_use,
        peak_reserved: s.peak_reserved,
        block_allocations: s.block_allocations,
        compaction_passes: s.compaction.passes,
        compaction_bytes: s.compaction.bytes_moved,
        compaction_time: s.compaction.duration,
        pages: s.pages.clone(),
        mean_per_pair: wall / trace.allocations.max(1) as u32,
        median_per_pair,
    }
}

/// The smallest budget (to 0.1 %) under which the replay completes on contexts from `mk`,
/// searched between the live peak and `hi` (a budget known to complete).
pub fn min_budget<B: Backend>(trace: &Trace, hi: u64, mk: impl Fn(u64) -> Context<B>) -> u64 {
    let (mut lo, mut hi) = (trace.live_peak, hi);
    while hi - lo > (hi / 1000).max(1 << 20) {
        let mid = lo + (hi - lo) / 2;
        if replay(&mk(mid), trace, false).completed {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Bytes as GB with two decimals.
pub fn gb(b: u64) -> String {
    format!("{:.2} GB", b as f64 / 1e9)
}

/// One line of the replay table.
pub struct Row {
    pub trace: String,
    pub backend: String,
    pub live_peak: u64,
    pub outcome: Outcome,
    pub min_budget: Option<u64>,
    /// PyTorch's segment count (cudaMalloc calls) for the captured run.
    pub torch_segments: Option<u64>,
}

/// Replays `trace` twice on fresh contexts from `mk(None)` (once plain for the mean, once
/// timing each pair for the median) and, with `search`, bisects the smallest budget.
pub fn measure<B: Backend>(
    trace: &Trace,
    backend: &str,
    search: bool,
    mk: impl Fn(Option<u64>) -> Context<B>,
) -> Row {
    let mut outcome = replay(&mk(None), trace, false);
    outcome.median_per_pair = replay(&mk(None), trace, true).median_per_pair;
    let min_budget = (search && outcome.completed).then(|| {
        let hi = outcome.peak_reserved.max(trace.live_peak * 11 / 10);
        min_budget(trace, hi, |b| mk(Some(b)))
    });
    Row {
        trace: trace.name.clone(),
        backend: backend.into(),
        live_peak: trace.live_peak,
        outcome,
        min_budget,
        torch_segments: trace.torch["segment.all.allocated"].as_u64(),
    }
}

/// Page traffic as `moved / given back / mapped again`, each `GB (ranges)`, and the pages in
/// all (the driver's calls are paid per page).
fn pages(p: &vramkit::observe::PageStats) -> String {
    let one = |bytes: u64, ranges: u64| format!("{:.2} ({ranges})", bytes as f64 / 1e9);
    format!(
        "{} / {} / {}; {} pages",
        one(p.moved_bytes, p.moves),
        one(p.unmapped_bytes, p.unmaps),
        one(p.mapped_bytes, p.maps),
        p.pages
    )
}

/// The table, one row per trace and backend, as in BENCHMARKS.md.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| trace | backend | live peak | reserved peak | reserved ÷ live | block allocations (PyTorch segments) | smallest budget ÷ live | mean / median per alloc+release | compaction passes, moved, time | pages moved / given back / mapped again: GB (ranges); pages |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let o = &r.outcome;
        let ratio = |b: u64| b as f64 / r.live_peak as f64;
        let status = if o.completed {
            String::new()
        } else {
            format!(" (stopped: {})", o.error.as_deref().unwrap_or("?"))
        };
        out += &format!(
            "| {} | {} | {} | {} | {:.3}{status} | {} ({}) | {} | {:.0} ns / {} | {}, {:.2} GB, {:.1} ms | {} |\n",
            r.trace,
            r.backend,
            gb(r.live_peak),
            gb(o.peak_reserved),
            ratio(o.peak_reserved),
            o.block_allocations,
            r.torch_segments.map_or("?".into(), |s| s.to_string()),
            r.min_budget.map_or("-".into(), |b| format!("{:.3}", ratio(b))),
            o.mean_per_pair.as_nanos(),
            o.median_per_pair.map_or("-".into(), |m| format!("{} ns", m.as_nanos())),
            o.compaction_passes,
            o.compaction_bytes as f64 / 1e9,
            o.compaction_time.as_secs_f64() * 1e3,
            pages(&o.pages),
        );
    }
    out
}

/// What a live program does between two allocator calls, as far as the caches go: with
/// `VRAMKIT_REPLAY_EVICT=BYTES`, a walk over that many bytes of other memory before each call
/// (outside the time measured), so that the manager's own data comes back from farther caches
/// as in a training loop, whose Python and kernel launches run between calls.
pub struct Evict(pub Vec<u64>);

impl Evict {
    pub fn from_env() -> Self {
        let bytes: usize = std::env::var("VRAMKIT_REPLAY_EVICT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Self(vec![0; bytes / 8])
    }

    /// Walks the memory (one write a cache line); whether there is any.
    pub fn touch(&mut self) -> bool {
        for w in self.0.iter_mut().step_by(8) {
            *w = w.wrapping_add(1);
        }
        std::hint::black_box(&self.0);
        if !self.0.is_empty() {
            warm_stack();
        }
        !self.0.is_empty()
    }
}

/// Uses the stack below the caller's frame, as the caller's own code does before it calls
/// the allocator: what the walk evicts is the manager's data, not the stack every call
/// shares.
#[inline(never)]
fn warm_stack() {
    let mut frame = [0u8; 32 << 10];
    for b in frame.iter_mut().step_by(64) {
        *b = 1;
    }
    std::hint::black_box(&mut frame);
}
