//! Compaction's pause: one explicit pass (`Memory::compact(256 MiB)`) over a pool that half of
//! its live allocations just left (512 allocations of 2 MiB, every other one released: 512 MiB
//! live in 1 GiB), timed from the call until the device is idle, while kernels run before and
//! after it on allocations that the pass moves. Every moved byte and every kernel's result is
//! checked against the CPU. On the wgpu adapter (fixed blocks, evacuated into holes of others)
//! and, with `--features cuda`, on CUDA device 0 with segments (compacted by sliding down) and
//! with fixed blocks.
//!
//! `cargo bench --bench compaction` (add `--features cuda` on an NVIDIA machine). Run as a test
//! (`cargo test --all-targets`) it does the same with 1/16 of the sizes on host and wgpu.

use std::time::{Duration, Instant};

use vramkit::backend::host::HostBackend;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc};

const MIB: u64 = 1 << 20;

struct Run {
    backend: String,
    moved: u64,
    allocations: u64,
    blocks_freed: u64,
    pause: Duration,
}

fn pattern(i: usize, words: usize) -> Vec<f32> {
    (0..words).map(|j| ((i * 31 + j) % 1000) as f32).collect()
}

/// One fragmented pool, one pass of `max` bytes, kernels around it; returns the pass's figures.
fn pass<B: Backend>(ctx: &Context<B>, name: &str, scale: u64, reps: usize) -> Run {
    let size = 2 * MIB / scale;
    let words = (size / 4) as usize;
    let count = 512;
    let max = 256 * MIB / scale;
    let mut pauses = Vec::new();
    let mut last = None;
    for rep in 0..reps {
        // Even repetitions time the pass on an idle device; odd ones run kernels around it.
        let kernels = rep % 2 == 1 && ctx.backend().device_info().api != "host";
        let handles: Vec<BufferHandle> = (0..count)
            .map(|i| {
                let h = ctx
                    .alloc(AllocDesc::new("frag", size).uninit())
                    .expect("alloc");
                ctx.upload(h, bytemuck::cast_slice(&pattern(i, words)))
                    .expect("upload");
                h
            })
            .collect();
        let mut live = Vec::new();
        for (i, h) in handles.into_iter().enumerate() {
            if i % 2 == 0 {
                ctx.release(h).expect("release");
            } else {
                live.push((i, h));
            }
        }
        // x: the first live allocation; y: the last (the ones a pass moves first and last).
        let (ix, x) = live[0];
        let (iy, y) = live[live.len() - 1];
        let mut want = pattern(iy, words);
        for (w, v) in want.iter_mut().zip(pattern(ix, words)) {
            *w += 2.0 * v;
        }
        ctx.wait().expect("wait");
        let t = Instant::now();
        if kernels {
            vramkit_kernels::axpy(ctx, 1.0, x, y).expect("axpy before");
        }
        let report = ctx.memory().compact(max).expect("compact");
        if kernels {
            vramkit_kernels::axpy(ctx, 1.0, x, y).expect("axpy after");
        }
        ctx.wait().expect("wait");
        assert!(report.bytes_moved <= max);
        if rep % 2 == 0 {
            pauses.push(t.elapsed());
            last = Some(report);
        }
        for &(i, h) in &live {
            let back = ctx.download(h).expect("download");
            let expect = if h == y && kernels {
                want.clone()
            } else {
                pattern(i, words)
            };
            assert!(
                back == bytemuck::cast_slice::<f32, u8>(&expect),
                "{name}: allocation {i} lost its content in compaction"
            );
        }
        ctx.observe().audit().check().expect("audit");
        for (_, h) in live {
            ctx.release(h).expect("release");
        }
        ctx.memory().trim().expect("trim");
    }
    pauses.sort();
    let report = last.expect("at least one repetition");
    Run {
        backend: name.into(),
        moved: report.bytes_moved,
        allocations: report.allocations_moved,
        blocks_freed: report.blocks_freed,
        pause: pauses[pauses.len() / 2],
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (scale, reps) = if bench { (1, 14) } else { (16, 2) };
    let desc = ContextDesc::default;
    let mut runs = vec![pass(
        &Context::with_backend(HostBackend::default(), desc()),
        "host",
        scale,
        reps,
    )];
    match Context::new(desc()) {
        Ok(ctx) => {
            let name = format!("wgpu ({})", ctx.adapter_info().name);
            runs.push(pass(&ctx, &name, scale, reps));
        }
        Err(e) => eprintln!("no wgpu adapter: {e}"),
    }
    #[cfg(feature = "cuda")]
    {
        use vramkit::backend::cuda::{CudaBackend, CudaConfig};
        use vramkit::backend::Storage;
        for segments in [true, false] {
            match CudaBackend::with_config(
                0,
                CudaConfig {
                    segments,
                    ..Default::default()
                },
            ) {
                Ok(b) => {
                    let name = format!(
                        "cuda ({}, {})",
                        b.device_info().name,
                        if segments { "segments" } else { "fixed blocks" }
                    );
                    runs.push(pass(&Context::with_backend(b, desc()), &name, scale, reps));
                }
                Err(e) => eprintln!("no CUDA: {e}"),
            }
        }
    }
    println!(
        "| backend | bytes moved in the pass | allocations moved | blocks freed | pause \
         (median of {}) | GB/s |",
        reps / 2
    );
    println!("|---|---|---|---|---|---|");
    for r in runs {
        println!(
            "| {} | {:.0} MiB | {} | {} | {:.3} ms | {:.0} |",
            r.backend,
            r.moved as f64 / MIB as f64,
            r.allocations,
            r.blocks_freed,
            r.pause.as_secs_f64() * 1e3,
            r.moved as f64 / r.pause.as_secs_f64() / 1e9
        );
    }
}
