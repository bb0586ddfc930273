//! The transfer part of `benches/cuda.rs`: one 4K RGBA8 frame (33,177,600 B) and 256 MiB, both
//! directions, side by side: vramkit's slice API (4 MiB and 16 MiB slots), `upload_with` /
//! `download_with` (the caller fills and reads pinned staging in place), a `StagingBuffer` the
//! caller filled once (`upload_staging`: the DMA alone), raw `cuMemcpy` from
//! pinned memory (the reference), from pageable memory and from the caller's memory pinned for
//! the one copy (`cuMemHostRegister` + copy + unregister: does registering pay?), and host-only probes of the copy
//! into pinned memory (`memcpy` on one and on eight threads, `copy_to_staging`: rayon and
//! streaming stores) and into pageable memory, which tell where the slice API's time goes.
//! `upload_with_copy` closures copy with `vramkit::transfers::copy_to_staging`; `memset` ones
//! cost next to nothing (the ring's own ceiling).

use std::time::Duration;

use criterion::{Criterion, Throughput};
use vramkit::backend::cuda::cudarc::driver::{result as cu, sys};
use vramkit::backend::cuda::CudaBackend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc};

type Ctx = Context<CudaBackend>;

/// Pinned host memory of `len` bytes, freed on drop.
pub struct Pinned(*mut u8, usize);

impl Pinned {
    pub fn new(len: usize) -> Self {
        // SAFETY: a plain pinned allocation, zeroed before use.
        let p = unsafe { cu::malloc_host(len, 0) }
            .expect("cuMemHostAlloc")
            .cast::<u8>();
        // SAFETY: `p` points to `len` writable bytes.
        unsafe { std::ptr::write_bytes(p, 0, len) };
        Self(p, len)
    }

    pub fn slice(&mut self) -> &mut [u8] {
        // SAFETY: `self.0` points to `self.1` bytes owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by `cuMemHostAlloc`, freed once.
        let _ = unsafe { cu::free_host(self.0.cast()) };
    }
}

/// `dst.copy_from_slice(src)` over `threads` scoped threads.
fn threaded_copy(src: &[u8], dst: &mut [u8], threads: usize) {
    let piece = src.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (d, c) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}

fn sizes() -> Vec<(&'static str, usize)> {
    if super::quick() {
        vec![("4k_rgba8", 33_177_600)]
    } else {
        vec![("4k_rgba8", 33_177_600), ("256MiB", 256 << 20)]
    }
}

pub fn transfers(c: &mut Criterion, ctx: &Ctx) {
    // The default ring (4 slots of 4 MiB) and one of 4 slots of 16 MiB.
    let wide = Context::cuda(
        0,
        ContextDesc {
            staging_chunk: 16 << 20,
            ..Default::default()
        },
    )
    .expect("context");
    for (name, size) in sizes() {
        one_size(c, ctx, &wide, name, size);
    }
}

fn one_size(c: &mut Criterion, ctx: &Ctx, wide: &Ctx, name: &str, size: usize) {
    let mut g = c.benchmark_group(format!("cuda_transfer_{name}"));
    g.sample_size(10);
    // 21 functions a size: short runs keep both sizes near 90 s (a 256 MiB copy is 5-40 ms).
    g.measurement_time(Duration::from_millis(if super::quick() {
        800
    } else {
        1500
    }));
    g.warm_up_time(Duration::from_millis(300));
    g.throughput(Throughput::Bytes(size as u64));
    let data: Vec<u8> = (0..size)
        .map(|i| ((i * 2_654_435_761) >> 13) as u8)
        .collect();
    let mut out = vec![0u8; size];
    let mut pinned = Pinned::new(size);
    pinned.slice().copy_from_slice(&data);
    let h = ctx
        .alloc(AllocDesc::new("bench", size as u64))
        .expect("alloc");
    let hw = wide
        .alloc(AllocDesc::new("bench", size as u64))
        .expect("alloc");
    // SAFETY: a plain device allocation for the raw copies, freed below.
    let raw = unsafe { cu::malloc_sync(size) }.expect("cuMemAlloc");
    let range = 0..size as u64;

    // Uploads.
    for (name, ctx, h) in [
        ("vramkit_upload", ctx, h),
        ("vramkit_upload_16MiB_slots", wide, hw),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                ctx.upload(h, &data).expect("upload");
                ctx.wait().expect("wait");
            })
        });
    }
    let up_with = |ctx: &Ctx, h: BufferHandle, fill: bool| {
        super::upload_with::upload_with(ctx, h, &data, fill);
    };
    g.bench_function("vramkit_upload_with_copy", |b| {
        b.iter(|| up_with(ctx, h, false))
    });
    g.bench_function("vramkit_upload_with_copy_16MiB_slots", |b| {
        b.iter(|| up_with(wide, hw, false))
    });
    // A producer that costs next to nothing: the ring's own ceiling.
    g.bench_function("vramkit_upload_with_memset_16MiB_slots", |b| {
        b.iter(|| up_with(wide, hw, true))
    });
    // Staging the caller owns, filled once: the device's copy alone.
    let mut owned = ctx
        .transfers()
        .alloc_staging(size as u64)
        .expect("alloc_staging");
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
    // Checked after one call of its own, so that the check holds whatever the filter ran.
    ctx.upload(h, &vec![0u8; data.len()]).expect("clear");
    ctx.transfers()
        .upload_staging(&mut owned, h, 0)
        .expect("upload_staging");
    upload_check(ctx, h, &data, "upload_staging");
    ctx.transfers().free_staging(owned).expect("free_staging");
    g.bench_function("cuMemcpyHtoD_pinned", |b| {
        // SAFETY: `raw` holds `size` bytes; the pinned buffer outlives the synchronous copy.
        b.iter(|| {
            unsafe { sys::cuMemcpyHtoD_v2(raw, pinned.0.cast(), size) }
                .result()
                .expect("copy")
        })
    });
    g.bench_function("cuMemcpyHtoD_pageable", |b| {
        // SAFETY: as above, from pageable memory.
        b.iter(|| {
            unsafe { sys::cuMemcpyHtoD_v2(raw, data.as_ptr().cast(), size) }
                .result()
                .expect("copy")
        })
    });
    // Pinning the caller's bytes for one transfer: does registration pay?
    g.bench_function("cuMemHostRegister_HtoD_unregister", |b| {
        b.iter(|| {
            registered(data.as_ptr().cast_mut(), size, |p| {
                // SAFETY: `raw` holds `size` bytes; `p` is registered for the synchronous copy.
                unsafe { sys::cuMemcpyHtoD_v2(raw, p.cast(), size) }.result()
            })
        })
    });
    // Host-only probes: pageable -> pinned, the slice API's extra copy.
    for threads in [1, 8] {
        g.bench_function(format!("host_copy_to_pinned_{threads}_threads"), |b| {
            b.iter(|| threaded_copy(&data, pinned.slice(), threads))
        });
    }
    g.bench_function("host_copy_to_pinned_copy_to_staging", |b| {
        b.iter(|| {
            let view = vramkit::transfers::WriteOnly::from_mut(pinned.slice());
            vramkit::transfers::copy_to_staging(&data, view).expect("copy")
        })
    });
    g.bench_function("host_copy_pageable_8_threads", |b| {
        b.iter(|| threaded_copy(&data, &mut out, 8))
    });
    ctx.upload(h, &data).expect("upload");
    upload_check(ctx, h, &data, "upload");
    ctx.upload(h, &vec![0u8; data.len()]).expect("clear");
    up_with(ctx, h, false);
    upload_check(ctx, h, &data, "upload_with");

    // Downloads.
    for (name, ctx, h) in [
        ("vramkit_download", ctx, h),
        ("vramkit_download_16MiB_slots", wide, hw),
    ] {
        ctx.upload(h, &data).expect("upload");
        out.fill(0);
        g.bench_function(name, |b| {
            b.iter(|| {
                ctx.transfers()
                    .download_into(h, 0, &mut out)
                    .expect("download")
            })
        });
        ctx.transfers()
            .download_into(h, 0, &mut out)
            .expect("download");
        assert!(out == data, "vramkit readback differs");
    }
    out.fill(0);
    let mut down_with = |ctx: &Ctx, h: BufferHandle, copy: bool| {
        let mut sum = 0u64;
        ctx.transfers()
            .download_with(h, range.clone(), |at, chunk| {
                if copy {
                    out[at as usize..at as usize + chunk.len()].copy_from_slice(chunk);
                } else {
                    // A consumer that reads one byte a page.
                    sum += chunk.iter().step_by(4096).map(|&b| b as u64).sum::<u64>();
                }
            })
            .expect("download_with");
        sum
    };
    g.bench_function("vramkit_download_with_copy", |b| {
        b.iter(|| down_with(ctx, h, true))
    });
    g.bench_function("vramkit_download_with_copy_16MiB_slots", |b| {
        b.iter(|| down_with(wide, hw, true))
    });
    g.bench_function("vramkit_download_with_peek_16MiB_slots", |b| {
        b.iter(|| down_with(wide, hw, false))
    });
    down_with(ctx, h, true);
    assert!(out == data, "download_with differs");
    g.bench_function("cuMemcpyDtoH_pinned", |b| {
        // SAFETY: as above, into the pinned buffer.
        b.iter(|| {
            unsafe { sys::cuMemcpyDtoH_v2(pinned.0.cast(), raw, size) }
                .result()
                .expect("copy")
        })
    });
    g.bench_function("cuMemHostRegister_DtoH_unregister", |b| {
        b.iter(|| {
            registered(out.as_mut_ptr(), size, |p| {
                // SAFETY: `raw` holds `size` bytes; `p` is registered for the synchronous copy.
                unsafe { sys::cuMemcpyDtoH_v2(p.cast(), raw, size) }.result()
            })
        })
    });
    g.bench_function("cuMemcpyDtoH_pageable", |b| {
        // SAFETY: as above, into pageable memory.
        b.iter(|| {
            unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), raw, size) }
                .result()
                .expect("copy")
        })
    });
    g.finish();
    // SAFETY: freed once, no work pending.
    unsafe { cu::free_sync(raw) }.expect("cuMemFree");
    ctx.release(h).expect("release");
    wide.release(hw).expect("release");
}

/// Registers `len` bytes at `p` with `cuMemHostRegister`, runs `f`, unregisters.
fn registered(p: *mut u8, len: usize, f: impl FnOnce(*mut u8) -> Result<(), cu::DriverError>) {
    // SAFETY: `p..p + len` is a live Rust allocation the caller holds for the call.
    unsafe { sys::cuMemHostRegister_v2(p.cast(), len, 0) }
        .result()
        .expect("cuMemHostRegister");
    f(p).expect("copy");
    // SAFETY: registered above, unregistered once.
    unsafe { sys::cuMemHostUnregister(p.cast()) }
        .result()
        .expect("cuMemHostUnregister");
}

fn upload_check(ctx: &Ctx, h: BufferHandle, data: &[u8], what: &str) {
    assert!(
        ctx.download(h).expect("download") == data,
        "{what}: the device holds other bytes than were sent"
    );
}
