//! The C ABI on the null device (`backend=null`): pointers with no memory behind them, for
//! measuring the allocator alone. Its own process, since the backend is chosen once.

use std::collections::BTreeMap;
use std::ffi::CString;

use rand::{Rng, SeedableRng};
use vramkit_capi::*;

fn configure(settings: &str) -> i32 {
    let s = CString::new(settings).unwrap_or_default();
    // SAFETY: a NUL-terminated string.
    unsafe { vramkit_configure(s.as_ptr()) }
}

fn last_error() -> String {
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` has 4096 writable bytes.
    let n = unsafe { vramkit_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(4095));
    String::from_utf8_lossy(&buf).into_owned()
}

/// More live bytes than the host has (24 GiB on CI), in allocations that never overlap,
/// checked against a model of the live ranges; statistics agree with the model.
#[test]
fn null_pointers_never_overlap_and_hold_no_memory() {
    assert_eq!(configure("backend=nowhere"), -1);
    assert!(last_error().contains("null"), "{}", last_error());
    assert_eq!(configure("backend=null"), 0, "{}", last_error());
    let device = 0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // Live ranges by start: (end, size asked).
    let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut order: Vec<u64> = Vec::new();
    let (mut bytes, mut peak) = (0u64, 0u64);
    for step in 0..4000 {
        let grow = step < 1500 || rng.random_bool(0.5);
        if grow || order.is_empty() {
            // Mostly small, with a few of a gigabyte and more.
            let size = if rng.random_bool(0.05) {
                rng.random_range(1u64 << 30..4 << 30)
            } else {
                rng.random_range(1..8 << 20)
            };
            // SAFETY: the null device takes any stream handle.
            let p = unsafe { vramkit_malloc(size as isize, device, std::ptr::null_mut()) } as u64;
            assert_ne!(p, 0, "malloc of {size} bytes: {}", last_error());
            let end = p + size;
            if let Some((&s, &(e, _))) = live.range(..end).next_back() {
                assert!(e <= p || s >= end, "{p:#x}+{size} overlaps {s:#x}..{e:#x}");
            }
            live.insert(p, (end, size));
            order.push(p);
            bytes += size;
            peak = peak.max(bytes);
        } else {
            let p = order.swap_remove(rng.random_range(0..order.len()));
            let (_, size) = live.remove(&p).unwrap_or_default();
            bytes -= size;
            // SAFETY: as above.
            unsafe { vramkit_free(p as *mut _, size as isize, device, std::ptr::null_mut()) };
        }
    }
    assert!(peak > 32 << 30, "the model peaked at {peak} bytes only");
    let mut s = VramkitStats::default();
    // SAFETY: `s` is a writable stats struct.
    assert_eq!(unsafe { vramkit_get_stats(device, &mut s) }, 0);
    assert_eq!(s.live, live.len() as u64);
    assert_eq!(s.requested, bytes);
    assert_eq!(s.peak_requested, peak);
    for (p, (_, size)) in live {
        // SAFETY: as above.
        unsafe { vramkit_free(p as *mut _, size as isize, device, std::ptr::null_mut()) };
    }
    // SAFETY: as above.
    assert_eq!(unsafe { vramkit_get_stats(device, &mut s) }, 0);
    assert_eq!((s.live, s.requested), (0, 0), "{}", last_error());
}
