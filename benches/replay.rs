//! Real-trace replay (`benches/traces/`): every stored trace through the memory manager on the
//! null host device (the manager alone; growing segments, and fixed blocks), on the wgpu
//! adapter and, with the `cuda` feature, on CUDA device 0, with the smallest completing budget
//! bisected on the null device. Prints the table of BENCHMARKS.md. Run as a test (`cargo test --all-targets`), it replays the smallest trace on
//! the null device once. `examples/replay.rs` does the same with a choice of backends.
//!
//! `cargo bench --bench replay` (add `--features cuda` on an NVIDIA machine). PyTorch's own
//! allocator on the same traces: `python3 benches/reference/replay_torch.py benches/traces/*.gz`.

#[path = "common/replay.rs"]
mod replay;

use vramkit::backend::host::{HostBackend, HostConfig};
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
        for resizable in [true, false] {
            let name = if resizable {
                "null (manager alone)"
            } else {
                "null, fixed blocks"
            };
            rows.push(replay::measure(&t, name, bench, |b| {
                Context::with_backend(
                    HostBackend::new(HostConfig {
                        keep_bytes: false,
                        resizable,
                        ..Default::default()
                    }),
                    desc(b),
                )
            }));
        }
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
