//! Real-trace replay (`benches/traces/`): every stored trace through the memory manager on host
//! memory (the manager alone), on the wgpu adapter and, with the `cuda` feature, on CUDA device
//! 0, with the smallest completing budget bisected on the host. Prints the table of
//! BENCHMARKS.md. Run as a test (`cargo test --all-targets`), it replays the smallest trace on
//! the host once.
//!
//! `cargo bench --bench replay` (add `--features cuda` on an NVIDIA machine). PyTorch's own
//! allocator on the same traces: `python3 benches/reference/replay_torch.py benches/traces/*.gz`.

#[path = "common/replay.rs"]
mod replay;

use vramkit::{Context, ContextDesc};

fn desc(budget: Option<u64>) -> ContextDesc {
    ContextDesc {
        budget,
        ..Default::default()
    }
}

fn main() -> anyhow::Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let mut paths = replay::stored();
    if !bench {
        paths.truncate(1);
    }
    let mut rows = Vec::new();
    for path in &paths {
        let t = replay::load(path)?;
        eprintln!("{}: {} allocations", t.name, t.allocations);
        rows.push(replay::measure(&t, "host", bench, |b| {
            Context::host(desc(b))
        }));
        if !bench {
            continue;
        }
        if let Ok(probe) = Context::new(ContextDesc::default()) {
            let name = format!("wgpu ({})", probe.adapter_info().name);
            drop(probe);
            rows.push(replay::measure(&t, &name, false, |b| {
                Context::new(desc(b)).expect("adapter")
            }));
        }
        #[cfg(feature = "cuda")]
        if let Ok(probe) = Context::cuda(0, ContextDesc::default()) {
            let name = format!("cuda ({})", probe.adapter_info().name);
            drop(probe);
            rows.push(replay::measure(&t, &name, false, |b| {
                Context::cuda(0, desc(b)).expect("CUDA device")
            }));
        }
    }
    print!("{}", replay::table(&rows));
    if rows.iter().any(|r| !r.outcome.completed) {
        anyhow::bail!("a replay did not complete");
    }
    Ok(())
}
