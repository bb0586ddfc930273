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

fn null() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        assert_eq!(configure("backend=nowhere"), -1);
        assert!(last_error().contains("null"), "{}", last_error());
        assert_eq!(configure("backend=null"), 0, "{}", last_error());
    });
}

fn stats(device: i32) -> VramkitStats {
    let mut s = VramkitStats::default();
    // SAFETY: `s` is a writable stats struct.
    assert_eq!(unsafe { vramkit_get_stats(device, &mut s) }, 0);
    s
}

/// More live bytes than the host has (24 GiB on CI), in allocations of two devices that
/// never overlap, within a device or across the two (one address space serves every
/// device), checked against a model of the live ranges; each pointer is freed through the
/// other device's index too (the C ABI finds its device by address), and statistics agree
/// with the model.
#[test]
fn null_pointers_never_overlap_and_hold_no_memory() {
    null();
    let devices = [0, 1];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // Live ranges by start: (end, size asked, device).
    let mut live: BTreeMap<u64, (u64, u64, i32)> = BTreeMap::new();
    let mut order: Vec<u64> = Vec::new();
    let (mut bytes, mut peak) = (0u64, 0u64);
    for step in 0..4000 {
        let device = devices[step % 2];
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
            if let Some((&s, &(e, _, d))) = live.range(..end).next_back() {
                assert!(
                    e <= p || s >= end,
                    "{p:#x}+{size} of device {device} overlaps {s:#x}..{e:#x} of device {d}"
                );
            }
            live.insert(p, (end, size, device));
            order.push(p);
            bytes += size;
            peak = peak.max(bytes);
        } else {
            let p = order.swap_remove(rng.random_range(0..order.len()));
            let (_, size, owner) = live.remove(&p).unwrap_or_default();
            bytes -= size;
            // Through the other device's index: found by its address.
            let other = 1 - owner;
            // SAFETY: as above.
            unsafe { vramkit_free(p as *mut _, size as isize, other, std::ptr::null_mut()) };
            assert_eq!(vramkit_last_error_kind(), 0, "{}", last_error());
        }
    }
    assert!(peak > 64 << 30, "the model peaked at {peak} bytes only");
    let (a, b) = (stats(0), stats(1));
    assert!(a.segments >= 1 && b.segments >= 1);
    assert_eq!(a.live + b.live, live.len() as u64);
    assert_eq!(a.requested + b.requested, bytes);
    for (p, (_, size, device)) in live {
        // SAFETY: as above.
        unsafe { vramkit_free(p as *mut _, size as isize, device, std::ptr::null_mut()) };
    }
    for d in devices {
        let s = stats(d);
        assert_eq!((s.live, s.requested), (0, 0), "{}", last_error());
    }
}

/// Blocks freed give their addresses back: more blocks than the null range holds at once
/// (64 segments of 1 TiB) are made and freed in turn.
#[test]
fn freed_blocks_give_their_addresses_back() {
    null();
    let device = 2;
    for round in 0..100 {
        // SAFETY: the null device takes any stream handle.
        let p = unsafe { vramkit_malloc(1 << 20, device, std::ptr::null_mut()) };
        assert!(!p.is_null(), "round {round}: {}", last_error());
        // SAFETY: as above.
        unsafe { vramkit_free(p, 1 << 20, device, std::ptr::null_mut()) };
        assert_eq!(vramkit_trim(device), 0, "{}", last_error());
        assert_eq!(stats(device).segments, 0);
    }
}
