//! Replays real allocation traces (captured from PyTorch training and inference runs by
//! `benches/traces/capture.py`) through vramkit's public API and prints the table of
//! BENCHMARKS.md: peaks, reserved ÷ live, block allocations against PyTorch's segments, the
//! smallest budget that completes (`--search`), and time per alloc + release.
//!
//! ```sh
//! cargo run --release --example replay -- --backend host --search
//! cargo run --release --features cuda --example replay -- --backend cuda benches/traces/gpt_train.trace.gz
//! ```

#[path = "../benches/common/replay.rs"]
mod replay;

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::Backend;
use vramkit::{Context, ContextDesc};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    /// Host memory with no bytes behind it: the memory manager alone.
    Null,
    /// The null device with fixed blocks (as on wgpu): the manager alone, without segments.
    NullFixed,
    /// Host memory.
    Host,
    Wgpu,
    /// CUDA device 0, device memory in growable segments (the default).
    Cuda,
    /// CUDA device 0 with fixed `cuMemAlloc` blocks (`CudaConfig::segments = false`).
    CudaFixed,
}

#[derive(Parser)]
#[command(about = "Replay PyTorch allocation traces through vramkit")]
struct Args {
    /// Trace files (default: every trace in benches/traces).
    traces: Vec<PathBuf>,
    /// Backends to replay on (repeatable).
    #[arg(long, value_enum, default_values_t = [BackendArg::Null])]
    backend: Vec<BackendArg>,
    /// Also bisect the smallest budget under which each replay completes.
    #[arg(long)]
    search: bool,
    /// Turn off compaction before growth (`CompactionDesc::before_growth`).
    #[arg(long)]
    no_compaction: bool,
    /// Make every allocation immovable, as the C ABI's pointers are (PyTorch holds them), with
    /// the C ABI's settings: no compaction before growth, and physical memory following the
    /// live set (`ContextDesc::follow_live`).
    #[arg(long)]
    pinned: bool,
    /// With --pinned: keep free pages mapped (`follow_live` off), for comparison.
    #[arg(long)]
    keep_pages: bool,
    /// Replay once under this budget, as a multiple of each trace's live peak (e.g. 1.02),
    /// and report whether it completes.
    #[arg(long)]
    budget: Option<f64>,
    /// With --budget: audit the context every N events.
    #[arg(long, default_value_t = 0)]
    audit: usize,
    /// The compaction slack in thousandths (`CompactionDesc::slack_permille`; default 5, and
    /// with --pinned the C ABI's 19).
    #[arg(long)]
    slack: Option<u32>,
    /// The null backend's page size in MiB (the unit in which pages go back; 2 as on current
    /// GPUs): the smallest page, where pages grow with the offset.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1024))]
    page_mib: u64,
    /// Pages of --page-mib everywhere, instead of pages that grow with the offset (as CUDA's
    /// `page_growth: false`).
    #[arg(long)]
    fixed_pages: bool,
}

fn desc(args: &Args, budget: Option<u64>) -> ContextDesc {
    let mut d = ContextDesc {
        budget,
        debug: vramkit::DebugSettings::from_env(),
        ..Default::default()
    };
    if args.pinned {
        d = replay::pinned_desc(d);
        d.follow_live = !args.keep_pages;
    }
    d.compaction.before_growth &= !args.no_compaction;
    if let Some(s) = args.slack {
        d.compaction.slack_permille = s;
    }
    d
}

fn run<B: Backend>(
    args: &Args,
    name: &str,
    traces: &[replay::Trace],
    mk: impl Fn(ContextDesc) -> Context<B>,
) -> Vec<replay::Row> {
    traces
        .iter()
        .map(|t| {
            eprintln!(
                "replaying {} on {name} ({} allocations)",
                t.name, t.allocations
            );
            if let Some(x) = args.budget {
                let budget = (t.live_peak as f64 * x) as u64;
                let o = replay::replay_checked(&mk(desc(args, Some(budget))), t, false, args.audit);
                eprintln!(
                    "  under {x} x live peak: {}",
                    o.error.as_deref().unwrap_or("completed")
                );
            }
            replay::measure(t, name, args.search, |b| mk(desc(args, b)))
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    replay::PINNED.store(args.pinned, std::sync::atomic::Ordering::Relaxed);
    let paths = if args.traces.is_empty() {
        replay::stored()
    } else {
        args.traces.clone()
    };
    let traces = paths
        .iter()
        .map(|p| replay::load(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut rows = Vec::new();
    for b in &args.backend {
        match b {
            BackendArg::Null => rows.extend(run(&args, "null (manager alone)", &traces, |d| {
                Context::with_backend(
                    HostBackend::new(HostConfig {
                        keep_bytes: false,
                        page_size: args.page_mib << 20,
                        page_growth: !args.fixed_pages,
                        ..Default::default()
                    }),
                    d,
                )
            })),
            BackendArg::NullFixed => rows.extend(run(&args, "null, fixed blocks", &traces, |d| {
                Context::with_backend(
                    HostBackend::new(HostConfig {
                        keep_bytes: false,
                        resizable: false,
                        ..Default::default()
                    }),
                    d,
                )
            })),
            BackendArg::Host => rows.extend(run(&args, "host", &traces, Context::host)),
            BackendArg::Wgpu => {
                let probe = Context::new(ContextDesc::default())?;
                let name = format!("wgpu ({})", probe.adapter_info().name);
                drop(probe);
                rows.extend(run(&args, &name, &traces, |d| {
                    Context::new(d).expect("the adapter opened a moment ago")
                }));
            }
            #[cfg(feature = "cuda")]
            BackendArg::Cuda => {
                let probe = Context::cuda(0, ContextDesc::default())?;
                let name = format!("cuda ({})", probe.adapter_info().name);
                drop(probe);
                rows.extend(run(&args, &name, &traces, |d| {
                    Context::cuda(0, d).expect("the device opened a moment ago")
                }));
            }
            #[cfg(feature = "cuda")]
            BackendArg::CudaFixed => {
                use vramkit::backend::cuda::{CudaBackend, CudaConfig};
                use vramkit::backend::Storage;
                let config = CudaConfig {
                    segments: false,
                    ..Default::default()
                };
                let probe = CudaBackend::with_config(0, config)?;
                let name = format!("cuda, fixed blocks ({})", probe.device_info().name);
                drop(probe);
                rows.extend(run(&args, &name, &traces, |d| {
                    Context::with_backend(
                        CudaBackend::with_config(0, config).expect("the device opened"),
                        d,
                    )
                }));
            }
            #[cfg(not(feature = "cuda"))]
            BackendArg::Cuda | BackendArg::CudaFixed => {
                anyhow::bail!("this build has no CUDA backend: build with --features cuda")
            }
        }
    }
    print!("{}", replay::table(&rows));
    Ok(())
}
