//! Compaction beside transfers: threads allocating, uploading, reading back and releasing
//! buffers on one shared context while another thread compacts every few milliseconds. Prints
//! throughput, the process's resident memory and vramkit's counters as it goes, so growth that
//! vramkit's own figures do not show (driver or wgpu objects piling up) is visible.
//!
//! `cargo run --release --example compact_stress -- --ops 100000` (add `--no-compact` for the
//! baseline without the compacting thread; `--help` lists the sizes and intervals).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use rand::{Rng, SeedableRng};
use vramkit::observe::MemoryStats;
use vramkit::{AllocDesc, Context, ContextDesc};

#[derive(Parser)]
struct Args {
    /// Operations in all (one: alloc, upload, download and check, release of an older buffer).
    #[arg(long, default_value_t = 20_000)]
    ops: u64,
    /// Transferring threads.
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Run without the compacting thread (the baseline).
    #[arg(long)]
    no_compact: bool,
    /// Bytes each compaction pass may move.
    #[arg(long, default_value_t = 4 << 20)]
    compact_bytes: u64,
    /// Milliseconds between compaction passes.
    #[arg(long, default_value_t = 5)]
    interval_ms: u64,
    /// Smallest buffer, bytes.
    #[arg(long, default_value_t = 4 << 10)]
    min_size: u64,
    /// Largest buffer, bytes.
    #[arg(long, default_value_t = 256 << 10)]
    max_size: u64,
    /// Buffers each thread keeps alive (released oldest first), so the pool has holes.
    #[arg(long, default_value_t = 8)]
    live: usize,
    /// Print a line every this many operations.
    #[arg(long, default_value_t = 1_000)]
    report_every: u64,
}

/// The process's resident memory in bytes (Linux), 0 when unknown.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn line(done: u64, since: (u64, Instant), start: Instant, s: &MemoryStats) -> String {
    let dt = since.1.elapsed().as_secs_f64().max(1e-9);
    format!(
        "ops {done:>7}  {:>8.0} ops/s (window)  {:>8.0} ops/s (total)  rss {:>8.1} MiB  \
         reserved {:>6.1} MiB  in_use {:>6.1} MiB  live {:>3}  compaction: {} passes, {} moved, \
         {:.1} MiB",
        (done - since.0) as f64 / dt,
        done as f64 / start.elapsed().as_secs_f64().max(1e-9),
        mib(rss()),
        mib(s.reserved),
        mib(s.in_use),
        s.live,
        s.compaction.passes,
        s.compaction.allocations_moved,
        mib(s.compaction.bytes_moved),
    )
}

fn main() -> anyhow::Result<()> {
    env_logger::init();
    let args = Args::parse();
    anyhow::ensure!(
        args.min_size >= 1 && args.min_size <= args.max_size,
        "--min-size must be at least 1 and at most --max-size"
    );
    let ctx = Context::new(ContextDesc {
        debug: vramkit::DebugSettings::from_env(),
        ..Default::default()
    })?;
    println!("device: {}", ctx.adapter_info());
    println!(
        "{} ops, {} transferring threads, compaction: {}, sizes {}..={} bytes, {} live per thread",
        args.ops,
        args.threads,
        if args.no_compact {
            "off".to_string()
        } else {
            format!(
                "{} MiB every {} ms",
                mib(args.compact_bytes),
                args.interval_ms
            )
        },
        args.min_size,
        args.max_size,
        args.live,
    );
    println!("rss at start {:.1} MiB", mib(rss()));

    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let mut window = (0, start);
    let (passes, compacted) = std::thread::scope(|s| -> anyhow::Result<(u64, u64)> {
        let workers: Vec<_> = (0..args.threads)
            .map(|t| {
                let (ctx, done, stop, args) = (&ctx, &done, &stop, &args);
                s.spawn(move || -> anyhow::Result<()> {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(t);
                    let mut kept = std::collections::VecDeque::new();
                    let result = (|| {
                        while !stop.load(Ordering::Relaxed)
                            && done.fetch_add(1, Ordering::Relaxed) < args.ops
                        {
                            let size = rng.random_range(args.min_size..=args.max_size);
                            let h = ctx.alloc(AllocDesc::new("stress", size).uninit())?;
                            kept.push_back(h);
                            let seed: u8 = rng.random();
                            let data: Vec<u8> = (0..size)
                                .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
                                .collect();
                            ctx.upload(h, &data)?;
                            let back = ctx.download(h)?;
                            anyhow::ensure!(back == data, "thread {t}: a buffer read back wrong");
                            if kept.len() > args.live {
                                if let Some(old) = kept.pop_front() {
                                    ctx.release(old)?;
                                }
                            }
                        }
                        Ok(())
                    })();
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    for h in kept {
                        ctx.release(h)?;
                    }
                    result
                })
            })
            .collect();
        let compactor = (!args.no_compact).then(|| {
            let (ctx, stop, args) = (&ctx, &stop, &args);
            s.spawn(move || -> anyhow::Result<(u64, u64)> {
                let (mut passes, mut moved) = (0, 0);
                while !stop.load(Ordering::Relaxed) {
                    let report = ctx.memory().compact(args.compact_bytes)?;
                    passes += 1;
                    moved += report.bytes_moved;
                    std::thread::sleep(Duration::from_millis(args.interval_ms));
                }
                Ok((passes, moved))
            })
        });
        let mut next = args.report_every;
        while workers.iter().any(|w| !w.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
            let n = done.load(Ordering::Relaxed).min(args.ops);
            if n >= next {
                println!("{}", line(n, window, start, &ctx.stats()));
                window = (n, Instant::now());
                next = (n / args.report_every + 1) * args.report_every;
            }
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a transferring thread panicked"))??;
        }
        match compactor {
            Some(c) => c
                .join()
                .map_err(|_| anyhow::anyhow!("the compacting thread panicked"))?,
            None => Ok((0, 0)),
        }
    })?;
    let elapsed = start.elapsed();
    ctx.wait()?;
    let stats = ctx.stats();
    println!(
        "done: {} ops in {:.2} s: {:.0} ops/s; {passes} compact calls moved {:.1} MiB; rss {:.1} MiB",
        args.ops,
        elapsed.as_secs_f64(),
        args.ops as f64 / elapsed.as_secs_f64(),
        mib(compacted),
        mib(rss()),
    );
    println!("{stats}");
    Ok(())
}
