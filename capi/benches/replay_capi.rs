//! The stored PyTorch allocation traces (`benches/traces/`) replayed through the C ABI
//! (`vramkit_malloc` / `vramkit_free`, as PyTorch's pluggable allocator calls them) on the host
//! backend, one device per trace, with the C ABI's default settings (pointers pinned,
//! `follow_live`): the time inside the library per malloc + free, counted by the library as
//! for a live run (`vramkit_stats.malloc_ns + free_ns`), and reserved ÷ live at the peak.
//!
//! `cargo bench -p vramkit-capi --bench replay_capi` (every trace); as a test, the smallest.
//! The `VRAMKIT_*` variables configure the library as in a live run: `VRAMKIT_BACKEND=cuda`
//! replays on a GPU, `VRAMKIT_BACKEND=null` every trace with no memory behind the pointers
//! (the library's own time alone; the bench sets `backend=host` only where
//! `VRAMKIT_BACKEND` is unset);
//! `VRAMKIT_TRACES` names another folder of traces; names given (or parts of them) pick traces.
//! `VRAMKIT_REPLAY_EVICT=BYTES` walks that much other memory before each call, outside the
//! library's time, as a training loop's Python and kernel launches do between two calls.

#[path = "../../benches/common/replay.rs"]
mod replay;

use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};

use replay::Op;
use vramkit_capi::{
    vramkit_configure, vramkit_free, vramkit_get_stats, vramkit_malloc, vramkit_trim, VramkitStats,
};

/// The memory a host segment reserves (`host_reserve`: pages given back inside it keep their
/// addresses, so it spans more than it holds), and the largest live peak the host replay takes
/// on within it: the larger traces are left to a GPU.
const HOST_RESERVE_GIB: u64 = 10;
const HOST_LIVE_LIMIT: u64 = 8_000_000_000;

fn main() -> anyhow::Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    // Names (parts of) of the traces to replay; all where none is given.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    // On the host (`VRAMKIT_BACKEND` unset), traces whose live peak is past what the host
    // replay takes on are left to a GPU.
    let host = std::env::var_os("VRAMKIT_BACKEND").is_none();
    if host {
        let settings = CString::new(if bench {
            format!("backend=host, host_reserve={HOST_RESERVE_GIB}GiB")
        } else {
            "backend=host".into()
        })?;
        // SAFETY: a NUL-terminated string.
        anyhow::ensure!(unsafe { vramkit_configure(settings.as_ptr()) } == 0);
    }
    let dir = match std::env::var_os("VRAMKIT_TRACES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/traces"),
    };
    let mut paths: Vec<_> = std::fs::read_dir(&dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.gz"))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            only.is_empty() || only.iter().any(|o| name.contains(o.as_str()))
        })
        .collect();
    paths.sort_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    if !bench && only.is_empty() {
        paths.truncate(1);
    }
    println!(
        "| trace | allocations | live peak | reserved peak | reserved ÷ live | pages given back / \
         mapped again / moved (ranges, GB) | mean malloc + free inside the library | of it, in the driver \
         (grow / pages / give back / stream waits) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (device, path) in paths.iter().enumerate() {
        let t = replay::load(path)?;
        let device = device as i32;
        if host && t.live_peak > HOST_LIVE_LIMIT {
            println!(
                "| {} | {} | {:.2} GB | skipped: a live peak past the host replay's {} GB \
                 (VRAMKIT_BACKEND=cuda replays it on a GPU) | | | | |",
                t.name,
                t.allocations,
                t.live_peak as f64 / 1e9,
                HOST_LIVE_LIMIT / 1_000_000_000
            );
            continue;
        }
        let mut ptrs: Vec<*mut c_void> = Vec::with_capacity(t.allocations);
        let mut evict = replay::Evict::from_env();
        for op in &t.ops {
            evict.touch();
            match *op {
                Op::Alloc(size) => {
                    // SAFETY: the legacy default stream (null) always exists.
                    let p = unsafe { vramkit_malloc(size as isize, device, std::ptr::null_mut()) };
                    anyhow::ensure!(!p.is_null(), "{}: malloc of {size} bytes refused", t.name);
                    ptrs.push(p);
                }
                Op::Free(i) => {
                    let p = std::mem::replace(&mut ptrs[i as usize], std::ptr::null_mut());
                    // SAFETY: as above.
                    unsafe { vramkit_free(p, 0, device, std::ptr::null_mut()) };
                }
            }
        }
        for p in ptrs.into_iter().filter(|p| !p.is_null()) {
            // SAFETY: as above.
            unsafe { vramkit_free(p, 0, device, std::ptr::null_mut()) };
        }
        let mut s = VramkitStats::default();
        // SAFETY: `s` is a writable stats struct.
        anyhow::ensure!(unsafe { vramkit_get_stats(device, &mut s) } == 0);
        // The next trace's device starts with this one's memory given back.
        anyhow::ensure!(vramkit_trim(device) == 0);
        anyhow::ensure!(s.live == 0 && s.malloc_calls == t.allocations as u64);
        let per = |ns: u64| ns as f64 / s.malloc_calls.max(1) as f64;
        let pair = per(s.malloc_ns + s.free_ns);
        println!(
            "| {} | {} | {:.2} GB | {:.2} GB | {:.3} | {} / {} / {} ({:.1} / {:.1} / {:.1} GB) | {:.0} ns | \
             {:.0} / {:.0} / {:.0} / {:.0} ns |",
            t.name,
            t.allocations,
            s.peak_requested as f64 / 1e9,
            s.peak_reserved as f64 / 1e9,
            s.peak_reserved as f64 / s.peak_requested.max(1) as f64,
            s.page_unmaps,
            s.page_maps,
            s.page_moves,
            s.unmapped_bytes as f64 / 1e9,
            s.mapped_bytes as f64 / 1e9,
            s.moved_bytes as f64 / 1e9,
            pair,
            per(s.grow_ns),
            per(s.page_ns),
            per(s.give_back_ns),
            per(s.stream_wait_ns),
        );
    }
    Ok(())
}
