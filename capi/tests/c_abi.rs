//! The C ABI on the host backend (`backend=host`): pointers round-trip through real memory,
//! many threads at once, budget refusals with their message, the ordering of memory freed on
//! one stream while it still runs (the host's model of streams), statistics against a model,
//! the timeline, and a C program compiled against `vramkit.h`.

use std::ffi::{c_void, CString};
use std::sync::Once;

use rand::{Rng, SeedableRng};
use vramkit_capi::*;

fn host() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let s = CString::new("backend=host").unwrap_or_default();
        // SAFETY: a NUL-terminated string.
        assert_eq!(
            unsafe { vramkit_configure(s.as_ptr()) },
            0,
            "{}",
            last_error()
        );
    });
}

fn last_error() -> String {
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` has 4096 writable bytes.
    let n = unsafe { vramkit_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(4095));
    String::from_utf8_lossy(&buf).into_owned()
}

fn stats(device: i32) -> VramkitStats {
    let mut s = VramkitStats::default();
    // SAFETY: `s` is a writable stats struct.
    assert_eq!(
        unsafe { vramkit_get_stats(device, &mut s) },
        0,
        "{}",
        last_error()
    );
    s
}

fn stream(n: u64) -> *mut c_void {
    n as *mut c_void
}

// The host backend's streams are numbers of its model: any stream handle is valid for it
// (the contract of `vramkit_malloc`, `vramkit_free` and `vramkit_record_stream`).

fn malloc(size: isize, device: i32, s: *mut c_void) -> *mut c_void {
    // SAFETY: host devices only (see above).
    unsafe { vramkit_malloc(size, device, s) }
}

fn free(p: *mut c_void, size: isize, device: i32, s: *mut c_void) {
    // SAFETY: as above.
    unsafe { vramkit_free(p, size, device, s) }
}

fn record_stream(p: *mut c_void, s: *mut c_void) {
    // SAFETY: as above.
    unsafe { vramkit_record_stream(p, s) }
}

// Each test uses devices of its own: they share the process's allocators.

#[test]
fn pointers_round_trip_through_real_memory() {
    host();
    let d = 1;
    let mut live = Vec::new();
    for i in 0..200usize {
        let size = 1 + i * 777;
        let p = malloc(size as isize, d, std::ptr::null_mut());
        assert!(!p.is_null(), "{}", last_error());
        // SAFETY: the host backend hands out `size` bytes of host memory at `p`.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), (i % 251) as u8, size) };
        live.push((p, size, (i % 251) as u8));
    }
    for &(p, size, v) in &live {
        // SAFETY: as above; nothing else writes these bytes.
        let b = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size) };
        assert!(b.iter().all(|&x| x == v), "an allocation was overwritten");
    }
    let s = stats(d);
    assert_eq!(s.live, 200);
    assert_eq!(s.requested, live.iter().map(|l| l.1 as u64).sum::<u64>());
    assert_eq!(s.malloc_calls, 200);
    for (p, size, _) in live {
        free(p, size as isize, d, std::ptr::null_mut());
    }
    let s = stats(d);
    assert_eq!((s.live, s.requested, s.releases), (0, 0, 200));
    assert_eq!(s.free_calls, 200);
    assert!(s.malloc_ns > 0 && s.free_ns > 0);
}

#[test]
fn size_zero_gives_distinct_pointers() {
    host();
    let a = malloc(0, 2, std::ptr::null_mut());
    let b = malloc(0, 2, std::ptr::null_mut());
    assert!(!a.is_null() && !b.is_null() && a != b, "{}", last_error());
    free(a, 0, 2, std::ptr::null_mut());
    free(b, 0, 2, std::ptr::null_mut());
    assert!(malloc(-5, 2, std::ptr::null_mut()).is_null());
    assert_eq!(vramkit_last_error_kind(), CErrorKind::Invalid as i32);
}

#[test]
fn many_threads_at_once_keep_their_bytes() {
    host();
    let d = 3;
    std::thread::scope(|s| {
        for t in 0..8u64 {
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(t);
                let mut mine: Vec<(usize, usize, u8)> = Vec::new();
                for step in 0..2000 {
                    if mine.len() < 40 && rng.random_range(0..3) > 0 {
                        let size = rng.random_range(1..200_000);
                        let p = malloc(size as isize, d, stream(t + 1));
                        assert!(!p.is_null(), "{}", last_error());
                        let v = (step % 250) as u8 + 1;
                        // SAFETY: `size` bytes of host memory at `p`, this thread's alone.
                        unsafe { std::ptr::write_bytes(p.cast::<u8>(), v, size) };
                        mine.push((p as usize, size, v));
                    } else if !mine.is_empty() {
                        let (p, size, v) = mine.swap_remove(rng.random_range(0..mine.len()));
                        // SAFETY: as above, still live.
                        let b = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
                        assert!(b.iter().all(|&x| x == v), "thread {t}: bytes changed");
                        free(p as *mut c_void, size as isize, d, stream(t + 1));
                    }
                }
                for (p, size, _) in mine {
                    free(p as *mut c_void, size as isize, d, stream(t + 1));
                }
            });
        }
    });
    let s = stats(d);
    assert_eq!((s.live, s.requested), (0, 0));
    assert_eq!(s.allocations, s.releases);
}

#[test]
fn a_budget_refusal_says_what_was_asked_and_what_is_held() {
    host();
    let d = 4;
    assert_eq!(vramkit_set_budget(d, 64 << 20), 0, "{}", last_error());
    let a = malloc(40 << 20, d, std::ptr::null_mut());
    assert!(!a.is_null(), "{}", last_error());
    let b = malloc(40 << 20, d, std::ptr::null_mut());
    assert!(b.is_null());
    assert_eq!(vramkit_last_error_kind(), CErrorKind::OverBudget as i32);
    let msg = last_error();
    for figure in [(40u64 << 20).to_string(), (64u64 << 20).to_string()] {
        assert!(msg.contains(&figure), "{figure} missing from: {msg}");
    }
    assert_eq!(stats(d).refusals, 1);
    assert_eq!(
        last_error(),
        msg,
        "reading the statistics to explain a refusal keeps its message"
    );
    free(a, 0, d, std::ptr::null_mut());
    let b = malloc(40 << 20, d, std::ptr::null_mut());
    assert!(
        !b.is_null(),
        "fits once the first is freed: {}",
        last_error()
    );
    free(b, 0, d, std::ptr::null_mut());
    assert_eq!(vramkit_set_budget(d, u64::MAX), 0);
}

#[test]
fn memory_freed_on_a_running_stream_waits_before_another_stream_gets_it() {
    host();
    let d = 5;
    let (a, b) = (stream(0xa), stream(0xb));
    assert_eq!(vramkit_host_hold_stream(d, a), 0, "{}", last_error());
    let p = malloc(1 << 20, d, a);
    free(p, 1 << 20, d, a);
    // Same stream: at once.
    let q = malloc(1 << 20, d, a);
    assert_eq!(q, p);
    assert_eq!(vramkit_host_stream_held(d, a), 1);
    free(q, 1 << 20, d, a);
    // Another stream: only once A passed the free.
    let r = malloc(1 << 20, d, b);
    if r == p {
        assert_eq!(
            vramkit_host_stream_held(d, a),
            0,
            "B got memory A still uses"
        );
    }
    free(r, 1 << 20, d, b);
    // record_stream: freed on B while C still reads it.
    let c = stream(0xc);
    let s = malloc(1 << 20, d, b);
    record_stream(s, c);
    assert_eq!(vramkit_host_hold_stream(d, c), 0);
    free(s, 1 << 20, d, b);
    assert_eq!(stats(d).pending_release, 1 << 20);
    let t = malloc(1 << 20, d, b);
    assert_ne!(t, s, "reused while stream C still reads it");
    assert_eq!(vramkit_host_resume_stream(d, c), 0);
    free(t, 1 << 20, d, b);
    let u = malloc(1 << 20, d, b);
    assert_eq!(stats(d).pending_release, 0);
    free(u, 1 << 20, d, b);
    // Freed with another stream than its own: that stream used it.
    assert_eq!(vramkit_host_hold_stream(d, c), 0);
    let v = malloc(1 << 20, d, b);
    free(v, 1 << 20, d, c);
    assert_eq!(stats(d).pending_release, 1 << 20);
    assert_eq!(vramkit_host_resume_stream(d, c), 0);
}

#[test]
fn unknown_pointers_and_bad_arguments_are_errors_not_crashes() {
    host();
    let d = 6;
    let p = malloc(4096, d, std::ptr::null_mut());
    free(p, 4096, d, std::ptr::null_mut());
    free(p, 4096, d, std::ptr::null_mut());
    assert_eq!(vramkit_last_error_kind(), CErrorKind::Invalid as i32);
    assert!(
        last_error().contains("did not hand out"),
        "{}",
        last_error()
    );
    free(0x1234 as *mut c_void, 1, -1, std::ptr::null_mut());
    assert!(last_error().contains("0x1234"));
    assert!(malloc(16, 64, std::ptr::null_mut()).is_null());
    assert!(last_error().contains("0 to 63"), "{}", last_error());
    assert!(malloc(16, -1, std::ptr::null_mut()).is_null());
    let bad = CString::new("budget=lots").unwrap_or_default();
    // SAFETY: a NUL-terminated string.
    assert_eq!(unsafe { vramkit_configure(bad.as_ptr()) }, -1);
    assert!(last_error().contains("70GiB"), "{}", last_error());
    let cuda = CString::new("backend=cuda").unwrap_or_default();
    // SAFETY: as above.
    assert_eq!(
        unsafe { vramkit_configure(cuda.as_ptr()) },
        -1,
        "backend fixed once used"
    );
    // SAFETY: null is refused, not read.
    assert_eq!(unsafe { vramkit_get_stats(d, std::ptr::null_mut()) }, -1);
    vramkit_set_memory_fraction(1.5, d);
    assert!(last_error().contains("(0, 1]"));
}

#[test]
fn summary_trim_and_timeline() -> anyhow::Result<()> {
    host();
    let d = 7;
    assert_eq!(vramkit_trace_start(d, 10_000), 0);
    let ptrs: Vec<_> = (0..10)
        .map(|i| malloc((i + 1) << 20, d, std::ptr::null_mut()))
        .collect();
    let mut buf = vec![0u8; 1 << 16];
    // SAFETY: `buf` has that many writable bytes.
    let n = unsafe { vramkit_summary(d, buf.as_mut_ptr().cast(), buf.len()) };
    let text = String::from_utf8_lossy(&buf[..n.min(buf.len() - 1)]).into_owned();
    assert!(text.contains("malloc"), "{text}");
    for p in ptrs {
        free(p, 0, d, std::ptr::null_mut());
    }
    assert!(stats(d).reserved > 0);
    assert_eq!(vramkit_trim(d), 0);
    assert_eq!(stats(d).reserved, 0);
    let path = std::env::temp_dir().join(format!("vramkit-capi-trace-{}.json", std::process::id()));
    let c = CString::new(path.to_string_lossy().as_bytes())?;
    // SAFETY: a NUL-terminated string.
    assert_eq!(
        unsafe { vramkit_trace_save(d, c.as_ptr()) },
        0,
        "{}",
        last_error()
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    let events = json["traceEvents"].as_array().map_or(0, Vec::len);
    assert!(events >= 20, "{events} events");
    std::fs::remove_file(path)?;
    Ok(())
}

/// Peaks restart from what is live; bytes made and freed, the most allocations alive and
/// the segments held follow a model of the calls; asking whether a device is open opens
/// nothing.
#[test]
fn peaks_restart_and_cumulative_figures_follow_the_calls() {
    host();
    let d = 9;
    let big = malloc(64 << 20, d, std::ptr::null_mut());
    let small: Vec<_> = (0..5)
        .map(|_| malloc(1 << 20, d, std::ptr::null_mut()))
        .collect();
    let s = stats(d);
    assert_eq!(s.peak_live, 6);
    assert_eq!((s.bytes_allocated, s.bytes_freed), (69 << 20, 0));
    assert!(s.segments >= 1);
    free(big, 0, d, std::ptr::null_mut());
    assert_eq!(stats(d).peak_in_use, 69 << 20, "the peak stays until reset");
    assert_eq!(vramkit_reset_peaks(d), 0, "{}", last_error());
    let s = stats(d);
    assert_eq!(
        (s.peak_in_use, s.peak_requested, s.peak_live),
        (5 << 20, 5 << 20, 5)
    );
    assert_eq!(s.peak_reserved, s.reserved);
    assert_eq!((s.bytes_allocated, s.bytes_freed), (69 << 20, 64 << 20));
    let more = malloc(2 << 20, d, std::ptr::null_mut());
    assert_eq!((stats(d).peak_in_use, stats(d).peak_live), (7 << 20, 6));
    for p in small.into_iter().chain([more]) {
        free(p, 0, d, std::ptr::null_mut());
    }
    assert_eq!(vramkit_reset_peaks(-1), 0, "{}", last_error());
    assert_eq!(stats(d).peak_in_use, 0);
    assert_eq!(vramkit_reset_peaks(64), -1);
    assert!(last_error().contains("device"), "{}", last_error());
    assert_eq!(vramkit_device_open(d), 1);
    assert_eq!(vramkit_device_open(41), 0, "never used: not open");
    assert_eq!(vramkit_device_open(41), 0, "asking opened nothing");
    assert_eq!(vramkit_device_open(-1), -1);
}

/// The directory cargo put the library in: the test binary's parent's parent.
fn library_dir() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.to_path_buf();
    dir.join("libvramkit_capi.so").exists().then_some(dir)
}

#[test]
fn a_c_program_compiles_against_the_header_and_runs() -> anyhow::Result<()> {
    let Some(lib) = library_dir() else {
        anyhow::bail!(
            "libvramkit_capi.so was not built beside the test binary: `cargo test` builds the \
             crate only as an rlib for its tests; run `cargo build -p vramkit-capi` (with the \
             same profile) first, as `make test` does"
        );
    };
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("vramkit-smoke-{}", std::process::id()));
    let built = std::process::Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&out)
        .arg(root.join("tests/c/smoke.c"))
        .arg("-I")
        .arg(root.join("include"))
        .arg("-L")
        .arg(&lib)
        .arg("-lvramkit_capi")
        .output();
    let built = match built {
        Ok(b) => b,
        Err(e) => {
            println!("SKIPPED: no C compiler ({cc}: {e}); set CC to one");
            return Ok(());
        }
    };
    anyhow::ensure!(
        built.status.success(),
        "{cc} failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = std::process::Command::new(&out)
        .env("LD_LIBRARY_PATH", &lib)
        .env("VRAMKIT_BACKEND", "host")
        .output()?;
    std::fs::remove_file(&out)?;
    let stdout = String::from_utf8_lossy(&run.stdout);
    anyhow::ensure!(
        run.status.success(),
        "the C program failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.starts_with("ok 64 allocations"), "{stdout}");
    println!("{stdout}");
    Ok(())
}
