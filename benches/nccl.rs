//! NCCL all-reduce (feature `nccl`): `NcclGroup::all_reduce` (sum, in place) of 1, 64 and 256
//! MiB of f32 across every device of `DeviceSet::cuda`, as bus bandwidth the way nccl-tests
//! defines it: `2 (n - 1) / n · bytes / time` (algorithm bandwidth, `bytes / time`, next to it).
//! Compare with `benches/reference/nccl_allreduce.py` (`torch.distributed.all_reduce`, one
//! process per GPU), which prints lines in the same format.
//!
//! Each figure: 20 all-reduces issued back to back and waited for on every device, the median
//! of 5 such runs after a warm-up, divided by 20. `VRAMKIT_BENCH_QUICK=1` runs 1 MiB only.
//! `NCCL_NVLS_ENABLE=0` unless set. Needs NCCL on the library path (see `devices::NcclGroup`'s docs); skips, saying why, without
//! CUDA or NCCL.

mod common;

use std::time::Instant;

use vramkit::devices::{nccl_version, DeviceSet, NcclGroup, ReduceOp};
use vramkit::{AllocDesc, ContextDesc};

const REPS: u32 = 20;

fn main() {
    // NVLink multicast off, as in the torch reference (and required on shared machines), unless
    // the caller chose; set before any thread starts.
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
    let set = match DeviceSet::cuda(common::with_env(ContextDesc::default()), None) {
        Ok(s) => s,
        Err(e) => return println!("nccl: skipped, no CUDA ({e})"),
    };
    let (major, minor, patch) = match nccl_version() {
        Ok(v) => v,
        Err(e) => return println!("nccl: skipped, no NCCL ({e})"),
    };
    let n = set.len();
    println!("nccl {major}.{minor}.{patch}, {n} devices");
    for (i, ctx) in set.devices().iter().enumerate() {
        println!("  device {i}: {}", ctx.adapter_info());
    }
    if n < 2 && !common::quick() {
        // One rank reduces nothing: no bandwidth to report.
        return println!("nccl: one device, nothing to measure (tests/nccl.rs checks one rank)");
    }
    let nccl = match NcclGroup::new(&set) {
        Ok(g) => g,
        Err(e) => return println!("nccl: skipped ({e})"),
    };
    let sizes: &[u64] = if common::quick() { &[1] } else { &[1, 64, 256] };
    for &mib in sizes {
        let bytes = mib << 20;
        let bufs: Vec<_> = (0..n)
            .map(|d| {
                set.alloc_on(d, AllocDesc::new("grads", bytes))
                    .expect("alloc")
            })
            .collect();
        for (d, b) in bufs.iter().enumerate() {
            let v = vec![d as f32; (bytes / 4) as usize];
            set.device(d)
                .unwrap()
                .upload(b.handle, bytemuck::cast_slice(&v))
                .expect("upload");
        }
        let run = || {
            for _ in 0..REPS {
                nccl.all_reduce(&set, &bufs, ReduceOp::Sum)
                    .expect("all-reduce");
            }
            for ctx in set.devices() {
                ctx.wait().expect("wait");
            }
        };
        run();
        let mut t: Vec<f64> = (0..5)
            .map(|_| {
                let start = Instant::now();
                run();
                start.elapsed().as_secs_f64() / f64::from(REPS)
            })
            .collect();
        t.sort_by(f64::total_cmp);
        let s = t[2];
        let algbw = bytes as f64 / s / 1e9;
        let busbw = algbw * 2.0 * (n as f64 - 1.0) / n as f64;
        println!(
            "vramkit_nccl_allreduce_{n}gpu_{mib}MiB: {:.3} ms = {busbw:.1} GB/s busbw ({algbw:.1} GB/s algbw)",
            s * 1e3
        );
        for b in bufs {
            set.release(b).expect("release");
        }
    }
}
