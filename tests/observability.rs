//! Statistics, tags, growth checks, leak reports and the summary, written once and run on host
//! memory and on every GPU backend: the counters must match a model kept by the test and a
//! recount from the live allocations after random operation sequences.

mod common;

use std::collections::HashMap;

use common::Mk;
use rand::{Rng, SeedableRng};
use vramkit::backend::Backend;
use vramkit::observe::EventKind;
use vramkit::{AllocDesc, BufferHandle, ContextDesc, DebugSettings, Error, MemoryKind};

backend_tests!(
    counters_match_a_model_after_random_operations,
    growth_checks_catch_a_planted_leak_and_pass_a_clean_loop,
    the_leak_report_lists_exactly_the_live_allocations,
    the_summary_names_kinds_tags_and_labels,
    the_trace_exports_chrome_json_and_an_svg_plot,
);

const MIB: u64 = 1 << 20;
const TAGS: [Option<&str>; 4] = [None, Some("weights"), Some("activations"), Some("frames")];

/// What the test knows of one live allocation: (bytes, kind, tag).
type Entry = (u64, MemoryKind, Option<&'static str>);
type Model = HashMap<BufferHandle, Entry>;

fn check_against_model<B: Backend>(ctx: &vramkit::Context<B>, model: &Model, errors: &[u64; 4]) {
    let s = ctx.stats();
    let total = |f: &dyn Fn(&Entry) -> bool| -> (u64, usize) {
        let v: Vec<_> = model.values().filter(|x| f(x)).collect();
        (v.iter().map(|x| x.0).sum(), v.len())
    };
    assert_eq!((s.requested, s.live), total(&|_| true), "totals");
    for kind in [MemoryKind::Device, MemoryKind::Unified] {
        let k = s.kind(kind);
        assert_eq!(
            (k.requested, k.allocations),
            total(&|x| x.1 == kind),
            "{kind:?}"
        );
        assert_eq!(
            k.over_budget_errors,
            errors[kind.index()],
            "{kind:?} refusals"
        );
    }
    for tag in TAGS {
        let name = tag.unwrap_or("");
        let (bytes, live) = total(&|x| x.2 == tag);
        match s.tag(name) {
            Some(t) => assert_eq!((t.requested, t.live), (bytes, live), "tag {name:?}"),
            None => assert_eq!(live, 0, "tag {name:?} missing from the stats"),
        }
    }
    assert_eq!(s.over_budget_errors, errors.iter().sum::<u64>());
    let report = ctx.observe().audit();
    assert!(
        report.is_clean(),
        "counters disagree with a recount: {report}"
    );
}

/// What the test knows of the peaks since the last reset and of the bytes held by every
/// allocation made and released.
#[derive(Default)]
struct Peaks {
    requested: u64,
    live: usize,
    allocated: u64,
    released: u64,
}

impl Peaks {
    fn reset(&mut self, model: &Model) {
        self.requested = model.values().map(|x| x.0).sum();
        self.live = model.len();
    }

    fn follow(&mut self, model: &Model) {
        self.requested = self.requested.max(model.values().map(|x| x.0).sum());
        self.live = self.live.max(model.len());
    }

    fn allocated(&mut self, held: u64) {
        self.allocated += held;
    }

    fn released(&mut self, held: u64) {
        self.released += held;
    }

    fn check(&self, s: &vramkit::observe::MemoryStats) {
        assert_eq!(
            (s.peak_requested, s.peak_live),
            (self.requested, self.live),
            "peaks since the last reset"
        );
        assert_eq!(
            (s.bytes_allocated, s.bytes_released),
            (self.allocated, self.released),
            "bytes allocated and released"
        );
        assert!(s.peak_in_use >= s.in_use && s.peak_reserved >= s.reserved);
    }
}

fn counters_match_a_model_after_random_operations<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(48 * MIB),
        block_size: Some(8 * MIB),
        staging_chunk: MIB,
        staging_slots: 2,
        ..Default::default()
    });
    let unified = ctx.backend().supports(MemoryKind::Unified).is_ok();
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let mut model = Model::new();
    let mut refused = [0u64; 4];
    let mut peaks = Peaks::default();
    for step in 0..400 {
        if step % 50 == 25 {
            ctx.observe().reset_peaks();
            peaks.reset(&model);
        }
        match rng.random_range(0..10) {
            0..=4 => {
                let size = match rng.random_range(0..3) {
                    0 => rng.random_range(1..4096),
                    1 => rng.random_range(4096..MIB),
                    _ => rng.random_range(MIB..12 * MIB),
                };
                let kind = if unified && rng.random_bool(0.3) {
                    MemoryKind::Unified
                } else {
                    MemoryKind::Device
                };
                let tag = TAGS[rng.random_range(0..TAGS.len())];
                let mut desc = AllocDesc::new(format!("a{step}"), size).kind(kind);
                if let Some(t) = tag {
                    desc = desc.tag(t);
                }
                match ctx.alloc(desc) {
                    Ok(h) => {
                        peaks.allocated(ctx.observe().allocation_info(h).expect("info").reserved);
                        model.insert(h, (size, kind, tag));
                    }
                    Err(Error::OverBudget { .. }) => refused[kind.index()] += 1,
                    Err(e) => panic!("step {step}: {e}"),
                }
            }
            5..=7 if !model.is_empty() => {
                let h = *model
                    .keys()
                    .nth(rng.random_range(0..model.len()))
                    .expect("key");
                peaks.released(ctx.observe().allocation_info(h).expect("info").reserved);
                ctx.release(h).expect("release");
                model.remove(&h);
            }
            8 if !model.is_empty() => {
                let h = *model
                    .keys()
                    .nth(rng.random_range(0..model.len()))
                    .expect("key");
                let n = model[&h].0.min(3 * MIB) as usize;
                match ctx.upload(h, &vec![step as u8; n]) {
                    Ok(()) => {}
                    // No room for even one staging buffer: a refusal the caller sees, named.
                    Err(Error::Staging {
                        direction, source, ..
                    }) if matches!(*source, Error::OverBudget { .. }) => {
                        assert_eq!(direction, "upload");
                        refused[MemoryKind::Upload.index()] += 1;
                    }
                    Err(e) => panic!("step {step}: {e}"),
                }
            }
            _ => {
                ctx.memory().trim().expect("trim");
            }
        }
        check_against_model(&ctx, &model, &refused);
        peaks.follow(&model);
        peaks.check(&ctx.stats());
    }
    assert!(refused.iter().sum::<u64>() > 0, "the budget was never hit");
    let s = ctx.stats();
    assert!(s.peak_requested >= s.requested && s.peak_in_use >= s.in_use);
    for h in model.keys() {
        ctx.release(*h).expect("release");
    }
    ctx.memory().trim().expect("trim");
    check_against_model(&ctx, &Model::new(), &refused);
}

fn growth_checks_catch_a_planted_leak_and_pass_a_clean_loop<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let keep = ctx.alloc(AllocDesc::new("before", 4096)).expect("alloc");
    let cp = ctx.observe().checkpoint();
    // Releasing an allocation older than the checkpoint is not growth.
    ctx.release(keep).expect("release");
    for i in 0..10u64 {
        let h = ctx
            .alloc(AllocDesc::new("scratch", 1000 + i).tag("activations"))
            .expect("alloc");
        ctx.upload(h, &[1; 1000]).expect("upload");
        ctx.release(h).expect("release");
    }
    ctx.observe()
        .check_no_growth(&cp)
        .expect("a clean loop does not grow");
    assert!(ctx.observe().growth_since(&cp).expect("growth").is_empty());

    let cp = ctx.observe().checkpoint();
    let mut leaked = Vec::new();
    for i in 0..9u64 {
        let h = ctx
            .alloc(AllocDesc::new("per-iteration cache", 2048).tag("frames"))
            .expect("alloc");
        let t = ctx.alloc(AllocDesc::new("scratch", 512)).expect("alloc");
        ctx.release(t).expect("release");
        if i % 3 == 0 {
            leaked.push(h); // the planted leak: every third iteration keeps its cache
        } else {
            ctx.release(h).expect("release");
        }
    }
    let g = ctx.observe().growth_since(&cp).expect("growth");
    assert_eq!((g.allocations, g.bytes), (3, 3 * 2048));
    assert_eq!(g.by_label.len(), 1);
    assert_eq!(g.by_label[0].label, "per-iteration cache");
    assert_eq!(g.by_label[0].tag.as_deref(), Some("frames"));
    assert_eq!(g.by_label[0].count, 3);
    match ctx.observe().check_no_growth(&cp) {
        Err(Error::MemoryGrowth {
            bytes,
            allocations,
            report,
        }) => {
            assert_eq!((bytes, allocations), (6144, 3));
            assert!(report.contains("per-iteration cache"), "{report}");
        }
        other => panic!("expected MemoryGrowth, got {other:?}"),
    }
    let other = mk(ContextDesc::default());
    assert!(matches!(
        other.observe().growth_since(&cp),
        Err(Error::InvalidParameter { .. })
    ));
    for h in leaked {
        ctx.release(h).expect("release");
    }
    ctx.observe().check_no_growth(&cp).expect("released again");
}

fn the_leak_report_lists_exactly_the_live_allocations<B: Backend>(mk: Mk<B>) {
    // No environment variable: the context's debug settings alone ask for backtraces.
    let ctx = mk(ContextDesc {
        debug: DebugSettings {
            backtraces: true,
            ..Default::default()
        },
        ..Default::default()
    });
    let mut live = Vec::new();
    for i in 0..12u64 {
        let tag = TAGS[i as usize % TAGS.len()];
        let mut desc = AllocDesc::new(format!("buffer {i}"), 100 * (i + 1));
        if let Some(t) = tag {
            desc = desc.tag(t);
        }
        let h = ctx.alloc(desc).expect("alloc");
        if i % 4 == 1 {
            ctx.release(h).expect("release");
        } else {
            live.push((format!("buffer {i}"), 100 * (i + 1), tag));
        }
    }
    let leaks = ctx.observe().leaks();
    let mut got: Vec<_> = leaks
        .iter()
        .map(|l| {
            (
                l.label.to_string(),
                l.size,
                l.tag.as_deref().map(str::to_owned),
            )
        })
        .collect();
    let mut want: Vec<_> = live
        .iter()
        .map(|(l, s, t)| (l.clone(), *s, t.map(str::to_owned)))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert!(
        leaks.windows(2).all(|w| w[0].reserved >= w[1].reserved),
        "largest first"
    );
    for l in &leaks {
        let at = l
            .allocated_at
            .as_deref()
            .expect("DebugSettings::backtraces captures a backtrace");
        // The backtrace names the function that allocated (this test's body), where the binary
        // has its symbols (the device runs stripped copies: frames without names there).
        assert!(
            at.contains("the_leak_report_lists_exactly_the_live_allocations")
                || !at.contains("vramkit::"),
            "{at}"
        );
        assert!(!at.is_empty());
    }
    // Without leaks, the report is empty; without the setting, leaks carry no backtrace.
    let clean = mk(ContextDesc::default());
    let h = clean.alloc(AllocDesc::new("x", 8)).expect("alloc");
    clean.release(h).expect("release");
    assert!(clean.observe().leaks().is_empty());
    let kept = clean.alloc(AllocDesc::new("kept", 8)).expect("alloc");
    let leaks = clean.observe().leaks();
    assert_eq!(leaks.len(), 1);
    assert_eq!(leaks[0].allocated_at, None, "no backtrace unless asked for");
    clean.release(kept).expect("release");
}

fn the_summary_names_kinds_tags_and_labels<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(64 * MIB),
        ..Default::default()
    });
    let w = ctx
        .alloc(AllocDesc::new("layer 7", 3 * MIB).tag("weights"))
        .expect("alloc");
    let a = ctx
        .alloc(AllocDesc::new("conv out", MIB).tag("activations"))
        .expect("alloc");
    let big = ctx.alloc(AllocDesc::new("too big", 100 * MIB));
    assert!(matches!(big, Err(Error::OverBudget { .. })));
    let s = ctx.observe().summary();
    for needle in [
        "Device",
        "weights",
        "activations",
        "layer 7",
        "conv out",
        "3.0 MiB",
        "64.0 MiB",
    ] {
        assert!(s.contains(needle), "summary lacks {needle:?}:\n{s}");
    }
    // Largest first: the 3 MiB label is listed before the 1 MiB one.
    assert!(s.find("layer 7") < s.find("conv out"), "{s}");
    assert!(s.contains("1 over budget"), "{s}");
    ctx.release(w).expect("release");
    ctx.release(a).expect("release");
}

fn the_trace_exports_chrome_json_and_an_svg_plot<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(32 * MIB),
        block_size: Some(4 * MIB),
        staging_chunk: MIB,
        staging_slots: 1,
        ..Default::default()
    });
    assert!(ctx.observe().trace().is_none(), "tracing is off by default");
    ctx.observe().start_trace(1000);
    let a = ctx
        .alloc(AllocDesc::new("frame", 3 * MIB).tag("frames"))
        .expect("alloc");
    let b = ctx.alloc(AllocDesc::new("small", 1000)).expect("alloc");
    ctx.upload(a, &vec![7; 3 * MIB as usize]).expect("upload");
    assert!(matches!(
        ctx.alloc(AllocDesc::new("huge", 64 * MIB)),
        Err(Error::OverBudget { .. })
    ));
    ctx.release(a).expect("release");
    ctx.release(b).expect("release");
    ctx.memory().trim().expect("trim");
    let trace = ctx.observe().stop_trace().expect("trace");
    assert!(ctx.observe().trace().is_none(), "stopped");
    let whats: Vec<EventKind> = trace.events.iter().map(|e| e.what).collect();
    for w in [
        EventKind::Alloc,
        EventKind::Release,
        EventKind::BlockGrow,
        EventKind::BlockTrim,
        EventKind::StagingGrow,
        EventKind::StagingTrim,
        EventKind::OverBudget,
        EventKind::Upload,
    ] {
        assert!(whats.contains(&w), "no {w:?} in {whats:?}");
    }
    assert_eq!(whats.iter().filter(|w| **w == EventKind::Alloc).count(), 2);
    assert!(
        trace.events.windows(2).all(|w| w[0].at_ns <= w[1].at_ns),
        "time runs forward"
    );
    let last = trace.events.last().expect("events");
    assert_eq!(
        (last.in_use, last.reserved),
        (0, 0),
        "everything was given back"
    );
    // The counters in each event are the stats at that moment: the first alloc's in-use.
    let first_alloc = trace
        .events
        .iter()
        .find(|e| e.what == EventKind::Alloc)
        .expect("alloc");
    assert_eq!(first_alloc.label, "frame");
    assert!(first_alloc.in_use >= 3 * MIB && first_alloc.kind_in_use == first_alloc.in_use);
    #[cfg(feature = "trace-export")]
    check_export(&trace);

    // The log is bounded: the oldest events go, and are counted.
    ctx.observe().start_trace(10);
    for _ in 0..20 {
        let h = ctx.alloc(AllocDesc::new("x", 64)).expect("alloc");
        ctx.release(h).expect("release");
    }
    let t = ctx.observe().stop_trace().expect("trace");
    // 41 events: one block grown (everything was trimmed), 20 allocs, 20 releases.
    assert_eq!((t.events.len(), t.dropped), (10, 31));
    assert_eq!(t.events[9].what, EventKind::Release);
}

/// The trace of [`the_trace_exports_chrome_json_and_an_svg_plot`] as Chrome trace JSON and as
/// an SVG plot (feature `trace-export`).
#[cfg(feature = "trace-export")]
fn check_export(trace: &vramkit::observe::Trace) {
    let json: serde_json::Value =
        serde_json::from_str(&trace.to_chrome_json()).expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let named = |name: &str, ph: &str| {
        events
            .iter()
            .filter(|e| e["name"] == name && e["ph"] == ph)
            .collect::<Vec<_>>()
    };
    let device = named("Device memory", "C");
    assert!(!device.is_empty(), "a Device counter track");
    assert!(device
        .iter()
        .all(|e| e["args"]["in use"].is_u64() && e["args"]["reserved"].is_u64()));
    let totals = named("memory (all kinds)", "C");
    assert!(totals.iter().all(|e| e["args"]["budget"] == 32 * MIB));
    assert!(
        !named("Upload memory", "C").is_empty(),
        "staging shows as Upload"
    );
    let allocs = named("alloc", "i");
    assert_eq!(allocs.len(), 2);
    assert_eq!(allocs[0]["args"]["label"], "frame");
    assert_eq!(allocs[0]["args"]["bytes"], 3 * MIB);
    assert_eq!(named("over budget", "i")[0]["args"]["bytes"], 64 * MIB);
    let up = named("upload", "i");
    assert_eq!(up.len(), 1);
    assert_eq!(
        (
            up[0]["args"]["label"].clone(),
            up[0]["args"]["bytes"].clone()
        ),
        ("frame".into(), (3 * MIB).into())
    );
    assert!(events.iter().all(|e| e["ph"] == "M" || e["ts"].is_number()));

    let svg = trace.to_svg(800, 400).expect("svg");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: String = doc
        .descendants()
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join(" ");
    for label in ["reserved", "in use", "budget", "MiB", "time (ms)"] {
        assert!(texts.contains(label), "the plot lacks {label:?}");
    }
    assert!(
        doc.descendants()
            .filter(|n| n.tag_name().name() == "polyline")
            .count()
            >= 3,
        "three series"
    );
    assert!(matches!(
        trace.to_svg(10, 10),
        Err(Error::InvalidParameter { .. })
    ));
}
