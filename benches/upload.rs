//! Uploads and readbacks of one 4K RGBA8 frame (33,177,600 B) and of 256 MiB through the staging
//! ring (the slice API with 4 MiB and 16 MiB slots, and `upload_with` / `download_with`, which
//! fill and read the mapped slots in place, and a `StagingBuffer` filled once), against `queue.write_buffer`, a `map_async`
//! readback into one kept MAP_READ buffer, a naive readback (a new MAP_READ buffer per call) and
//! a plain host `memcpy`, in one run. Each GPU iteration ends with the device idle.

mod common;

use std::time::{Duration, Instant};

use common::upload_with::upload_with;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vramkit::wgpu;
use vramkit::{AllocDesc, ContextDesc};

/// A readback through `map_async` into a MAP_READ buffer made once (the reference for
/// downloads: what an app that keeps its own staging gets).
fn mapped_readback(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
    staging: &wgpu::Buffer,
    out: &mut [u8],
) {
    let size = out.len() as u64;
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(src, 0, staging, 0, size);
    queue.submit([enc.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    common::device_idle(device);
    out.copy_from_slice(&staging.get_mapped_range(..).expect("mapped"));
    staging.unmap();
}

fn naive_readback(device: &wgpu::Device, queue: &wgpu::Queue, src: &wgpu::Buffer, out: &mut [u8]) {
    let size = out.len() as u64;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("naive readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(src, 0, &staging, 0, size);
    queue.submit([enc.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    common::device_idle(device);
    out.copy_from_slice(&staging.get_mapped_range(..).expect("mapped"));
}

fn bench(c: &mut Criterion) {
    let sizes: &[(&str, u64)] = if common::quick() {
        &[("4k_rgba8", 33_177_600)]
    } else {
        &[("4k_rgba8", 33_177_600), ("256MiB", 256 << 20)]
    };
    let ctx = common::gpu(ContextDesc::default());
    let wide = common::gpu(ContextDesc {
        staging_chunk: 16 << 20,
        ..Default::default()
    });
    for &(name, size) in sizes {
        let mut g = c.benchmark_group(format!("transfer_{name}"));
        g.throughput(Throughput::Bytes(size));
        g.sample_size(10);
        g.measurement_time(Duration::from_millis(if common::quick() {
            800
        } else {
            1500
        }));
        g.warm_up_time(Duration::from_millis(300));
        let data: Vec<u8> = (0..size)
            .map(|i| ((i * 2_654_435_761) >> 13) as u8)
            .collect();
        let mut out = vec![0u8; size as usize];

        g.bench_function("host_memcpy", |b| {
            b.iter(|| out.copy_from_slice(std::hint::black_box(&data)))
        });

        let (Some(ctx), Some(wide)) = (&ctx, &wide) else {
            continue;
        };
        let h = ctx.alloc(AllocDesc::new("bench", size)).expect("alloc");
        let hw = wide.alloc(AllocDesc::new("bench", size)).expect("alloc");
        let device = ctx.backend().device().clone();
        let queue = ctx.backend().queue().clone();
        let plain = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("plain"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });

        g.bench_function("vramkit_upload", |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    ctx.upload(h, &data).expect("upload");
                    ctx.wait().expect("wait");
                }
                t.elapsed()
            })
        });
        g.bench_function("vramkit_upload_16MiB_slots", |b| {
            b.iter(|| {
                wide.upload(hw, &data).expect("upload");
                wide.wait().expect("wait");
            })
        });
        g.bench_function("vramkit_upload_with_copy", |b| {
            b.iter(|| upload_with(ctx, h, &data, false))
        });
        g.bench_function("vramkit_upload_with_copy_16MiB_slots", |b| {
            b.iter(|| upload_with(wide, hw, &data, false))
        });
        g.bench_function("vramkit_upload_with_memset_16MiB_slots", |b| {
            b.iter(|| upload_with(wide, hw, &data, true))
        });
        upload_with(ctx, h, &data, false);
        assert!(
            ctx.download(h).expect("download") == data,
            "upload_with differs"
        );
        let mut owned = ctx.transfers().alloc_staging(size).expect("alloc_staging");
        ctx.transfers()
            .fill_staging(&mut owned, |mut v| v.copy_from_slice(&data))
            .expect("fill_staging");
        g.bench_function("vramkit_upload_staging_buffer", |b| {
            b.iter(|| {
                ctx.transfers()
                    .upload_staging(&mut owned, h, 0)
                    .expect("upload_staging");
                ctx.wait().expect("wait");
            })
        });
        ctx.transfers().free_staging(owned).expect("free_staging");
        g.bench_function("wgpu_write_buffer", |b| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    queue.write_buffer(&plain, 0, &data);
                    queue.submit([]);
                    common::device_idle(&device);
                }
                t.elapsed()
            })
        });
        g.bench_function("vramkit_download", |b| {
            b.iter(|| {
                ctx.transfers()
                    .download_into(h, 0, &mut out)
                    .expect("download")
            })
        });
        g.bench_function("vramkit_download_with_copy", |b| {
            b.iter(|| {
                ctx.transfers()
                    .download_with(h, 0..size, |at, chunk| {
                        out[at as usize..at as usize + chunk.len()].copy_from_slice(chunk)
                    })
                    .expect("download_with")
            })
        });
        out.fill(0);
        ctx.transfers()
            .download_with(h, 0..size, |at, chunk| {
                out[at as usize..at as usize + chunk.len()].copy_from_slice(chunk)
            })
            .expect("download_with");
        assert!(out == data, "download_with differs");
        let kept = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kept readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        g.bench_function("wgpu_map_async_readback", |b| {
            b.iter(|| mapped_readback(&device, &queue, &plain, &kept, &mut out))
        });
        g.bench_function("wgpu_naive_readback", |b| {
            b.iter(|| naive_readback(&device, &queue, &plain, &mut out))
        });
        queue.write_buffer(&plain, 0, &data);
        queue.submit([]);
        out.fill(0);
        naive_readback(&device, &queue, &plain, &mut out);
        assert!(out == data, "readback differs");
        ctx.release(h).expect("release");
        wide.release(hw).expect("release");
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
