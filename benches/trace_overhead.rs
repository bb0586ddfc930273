//! What the timeline costs: alloc + release pairs on a context with tracing on against one with
//! it off, interleaved round by round (the best round of each), on host memory and on the wgpu
//! adapter. Interleaving cancels the drift a shared machine shows between criterion groups
//! (±20 % here), which would hide a 10 % effect.
//!
//! `cargo bench --bench trace_overhead` (under `cargo test` it runs two short rounds).

use std::hint::black_box;
use std::time::Instant;

use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc};

fn pairs<B: Backend>(ctx: &Context<B>, n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let h = ctx
            .alloc(AllocDesc::new("bench", black_box(64 << 10)).uninit())
            .expect("alloc");
        ctx.release(h).expect("release");
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

/// Best time per pair off and on, over `rounds` interleaved rounds.
fn compare<B: Backend>(name: &str, off: &Context<B>, on: &Context<B>, rounds: u32, n: u32) {
    on.observe().start_trace(1 << 16);
    let (mut a, mut b) = (f64::MAX, f64::MAX);
    for round in 0..rounds {
        if round % 2 == 0 {
            a = a.min(pairs(off, n));
            b = b.min(pairs(on, n));
        } else {
            b = b.min(pairs(on, n));
            a = a.min(pairs(off, n));
        }
    }
    let events = on.observe().stop_trace().map_or(0, |t| t.events.len());
    println!(
        "{name}: tracing off {a:.1} ns, on {b:.1} ns per alloc + release: {:+.1} % ({events} events kept)",
        (b / a - 1.0) * 100.0
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, n) = if full { (40, 200_000) } else { (2, 1000) };
    let desc = ContextDesc::default;
    compare(
        "host",
        &Context::host(desc()),
        &Context::host(desc()),
        rounds,
        n,
    );
    match (Context::new(desc()), Context::new(desc())) {
        (Ok(off), Ok(on)) => compare(
            &format!("wgpu ({})", off.adapter_info().name),
            &off,
            &on,
            rounds,
            n,
        ),
        (Err(e), _) | (_, Err(e)) => println!("wgpu: skipped ({e})"),
    }
}
