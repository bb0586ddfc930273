//! The 4K chain untiled against tiled at 1/8 of the untiled working set, in one run.
//! `VRAMKIT_BENCH_QUICK=1` uses 1280×720.

#[path = "../../benches/common/mod.rs"]
mod common;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, test_chart, Pipeline, Rect};

fn bench(c: &mut Criterion) {
    let (w, h) = if common::quick() {
        (1280, 720)
    } else {
        (3840, 2160)
    };
    let chain = format!("linear,blur:sigma=3,resize:{}x{}:area,srgb", w / 2, h / 2);
    let p = Pipeline::new(parse_chain(&chain).expect("chain"), [w, h]).expect("pipeline");
    let input = test_chart(w, h);
    let [ow, oh] = p.output_size();
    let working = p.tile_bytes(Rect::full(ow, oh));
    let mut g = c.benchmark_group(format!("pipeline_{w}x{h}"));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(if common::quick() { 2 } else { 20 }));
    g.throughput(Throughput::Elements(u64::from(w * h)));
    let Some(untiled) = common::gpu(ContextDesc::default()) else {
        return;
    };
    let budget = working / 8;
    let tiled = common::gpu(ContextDesc {
        budget: Some(budget),
        staging_chunk: (budget / 32).clamp(64 << 10, 4 << 20) / 4096 * 4096,
        staging_slots: 2,
        ..Default::default()
    })
    .expect("adapter");
    let (_, r) = p.run(&tiled, &input).expect("tiled");
    eprintln!(
        "untiled working set {working} B; tiled at {budget} B: {} tiles of {:?}",
        r.tiles, r.tile
    );
    g.bench_function("untiled", |b| {
        b.iter(|| p.run(&untiled, &input).expect("untiled"))
    });
    g.bench_function("tiled_one_eighth_budget", |b| {
        b.iter(|| p.run(&tiled, &input).expect("tiled"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
