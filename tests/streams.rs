//! Memory used on streams vramkit does not own, on the host backend's model of streams
//! (`HostBackend::hold_stream`: a held stream "runs" work until resumed, and vramkit waiting
//! for it finishes that work). Checked: same-stream reuse at once, other streams only after the
//! releasing stream passed, `record_stream` holding a release, blocks given back only after
//! every stream passed, and a seeded random run against a model of in-flight work.

mod common;

use common::streams::{as_the_c_abi, segments, A, B, C, IN_FLIGHT};
use rand::{Rng, SeedableRng};
use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::{ForeignStream, StreamRef};
use vramkit::{AllocDesc, Context, ContextDesc};

fn ctx(desc: ContextDesc) -> Context<HostBackend> {
    let host = HostBackend::new(HostConfig {
        resizable: false,
        ..Default::default()
    });
    Context::with_backend(host, desc)
}

fn desc(n: u64) -> AllocDesc {
    AllocDesc::new("t", n).uninit()
}

#[test]
fn memory_released_on_a_stream_is_reused_at_once_on_it() -> anyhow::Result<()> {
    let ctx = ctx(ContextDesc::default());
    ctx.backend().hold_stream(A);
    let (h, p) = ctx.interop().alloc_on(desc(1 << 20), A)?;
    assert_eq!(p.stream, StreamRef::Foreign(A));
    ctx.release(h)?;
    let (h2, p2) = ctx.interop().alloc_on(desc(1 << 20), A)?;
    assert_eq!(p2.address, p.address, "same stream: reused at once");
    assert!(ctx.backend().is_held(A), "nothing waited for the stream");
    ctx.release(h2)?;
    ctx.observe().audit().check()?;
    Ok(())
}

#[test]
fn another_stream_takes_memory_only_after_the_releasing_stream_passed() -> anyhow::Result<()> {
    let ctx = ctx(ContextDesc::default());
    ctx.backend().hold_stream(A);
    let (h, p) = ctx.interop().alloc_on(desc(1 << 20), A)?;
    ctx.release(h)?;
    let (h2, p2) = ctx.interop().alloc_on(desc(1 << 20), B)?;
    if p2.address == p.address {
        assert!(
            !ctx.backend().is_held(A),
            "stream B got memory stream A still uses"
        );
    }
    ctx.release(h2)?;
    // vramkit's own allocations obey the same rule.
    ctx.backend().hold_stream(B);
    let (h3, _) = ctx.interop().alloc_on(desc(1 << 20), B)?;
    ctx.release(h3)?;
    let own = ctx.alloc(AllocDesc::new("own", 1 << 20))?;
    assert!(!ctx.backend().is_held(B), "vramkit's queue took B's memory");
    ctx.release(own)?;
    ctx.observe().audit().check()?;
    Ok(())
}

#[test]
fn record_stream_holds_a_release_until_that_stream_passed() -> anyhow::Result<()> {
    let ctx = ctx(ContextDesc::default());
    let (h, p) = ctx.interop().alloc_on(desc(1 << 20), A)?;
    ctx.interop().record_stream(h, B)?;
    ctx.backend().hold_stream(B);
    ctx.release(h)?;
    assert_eq!(ctx.stats().pending_release, 1 << 20);
    // Stream A itself may not take it either: B still reads it.
    let (h2, p2) = ctx.interop().alloc_on(desc(1 << 20), A)?;
    assert_ne!(p2.address, p.address, "reused while B still uses it");
    assert!(ctx.backend().is_held(B), "A's request need not wait for B");
    ctx.backend().resume_stream(B);
    ctx.release(h2)?;
    let (h3, p3) = ctx.interop().alloc_on(desc(1 << 20), A)?;
    assert!(
        p3.address == p.address || p3.address == p2.address,
        "the range came back"
    );
    assert_eq!(ctx.stats().pending_release, 0);
    ctx.release(h3)?;
    ctx.observe().audit().check()?;
    Ok(())
}

#[test]
fn blocks_go_back_only_after_every_stream_passed() -> anyhow::Result<()> {
    let ctx = ctx(ContextDesc::default());
    ctx.backend().hold_stream(A);
    let (h, _) = ctx.interop().alloc_on(desc(8 << 20), A)?;
    ctx.release(h)?;
    assert!(ctx.backend().is_held(A));
    let freed = ctx.memory().trim()?;
    assert!(freed > 0);
    assert!(
        !ctx.backend().is_held(A),
        "a block went back under A's work"
    );
    Ok(())
}

#[test]
fn a_budget_refusal_on_a_stream_says_what_was_asked() -> anyhow::Result<()> {
    let ctx = ctx(ContextDesc {
        budget: Some(16 << 20),
        ..Default::default()
    });
    let (h, _) = ctx.interop().alloc_on(desc(10 << 20), A)?;
    let e = ctx.interop().alloc_on(desc(10 << 20), A).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, vramkit::Error::OverBudget { requested, .. } if requested == 10 << 20),
        "{msg}"
    );
    assert!(msg.contains(&(10u64 << 20).to_string()), "{msg}");
    ctx.release(h)?;
    Ok(())
}

#[test]
fn wgpu_free_backends_refuse_foreign_streams_without_an_address() {
    // A host backend with resizable blocks has no stable addresses.
    let ctx = Context::with_backend(HostBackend::default(), ContextDesc::default());
    let e = ctx.interop().alloc_on(desc(4096), A).unwrap_err();
    assert!(matches!(e, vramkit::Error::Unsupported { .. }), "{e}");
    assert_eq!(ctx.stats().live, 0, "the refused allocation was released");
}

#[test]
fn device_ptr_pins_and_points_inside_the_block() -> anyhow::Result<()> {
    let ctx = ctx(ContextDesc::default());
    let h = ctx.alloc(AllocDesc::new("x", 1000))?;
    ctx.upload(h, &[7u8; 1000])?;
    let p = ctx.interop().device_ptr(h)?;
    assert_eq!(p.size, 1000);
    assert_eq!(p.stream, StreamRef::Own);
    // SAFETY: on the host backend the address is host memory of 1000 bytes the allocation
    // owns, and no vramkit work is pending on it.
    let bytes = unsafe { std::slice::from_raw_parts(p.address as *const u8, 1000) };
    assert!(bytes.iter().all(|&b| b == 7));
    // Compaction leaves it where it is.
    ctx.memory().compact(u64::MAX)?;
    assert_eq!(ctx.interop().device_ptr(h)?.address, p.address);
    ctx.release(h)?;
    Ok(())
}

/// In-flight work on one stream, as the model sees it: a range released while its stream was
/// held, and the resume count of that stream then.
struct Released {
    start: u64,
    end: u64,
    stream: ForeignStream,
    resumes: u64,
}

#[test]
fn random_streams_never_hand_out_memory_another_stream_still_uses() -> anyhow::Result<()> {
    for seed in 0..common::rounds(8) {
        let c = ctx(ContextDesc {
            release_threshold: if seed % 2 == 0 { u64::MAX } else { 4 << 20 },
            ..Default::default()
        });
        random_streams(&c, seed, false, 3)?;
    }
    Ok(())
}

/// As PyTorch through the C ABI: segments whose free pages follow the live set (moved where a
/// request needs memory, given back), where a page released on a stream still running must
/// keep its bytes until that stream passed.
#[test]
fn random_streams_never_take_pages_a_running_stream_still_uses() -> anyhow::Result<()> {
    // Three streams, then one as a training loop's: pages it released while it runs move to
    // its own next requests without a wait, their old place keeping its bytes until it passed.
    for (n, seeds) in [(3, 8), (1, 3)] {
        for seed in 0..common::rounds(seeds) {
            let c = as_the_c_abi();
            random_streams(&c, seed, true, n)?;
        }
    }
    Ok(())
}

/// A seeded random run of allocations and releases on `n` streams (up to three) held and resumed at
/// random, checked against the model of in-flight work: no other stream gets memory a held
/// stream released, and with `bytes`, the released bytes stay as that stream left them
/// (written before the release) until it passed or the same stream takes them again.
fn random_streams(
    ctx: &Context<HostBackend>,
    seed: u64,
    bytes: bool,
    n: usize,
) -> anyhow::Result<()> {
    let streams = [A, B, C];
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut resumes = [0u64; 3];
    let mut live: Vec<(vramkit::BufferHandle, u64, u64, usize, Vec<usize>)> = Vec::new();
    let mut released: Vec<Released> = Vec::new();
    let mut last = 0;
    for step in 0..1500 {
        // What the backend resumed on its own (vramkit waited) counts as a resume.
        for (i, s) in streams.iter().enumerate() {
            if resumes[i] % 2 == 1 && !ctx.backend().is_held(*s) {
                resumes[i] += 1;
            }
        }
        match rng.random_range(0..10) {
            0 => {
                let i = rng.random_range(0..n);
                if resumes[i] % 2 == 0 {
                    ctx.backend().hold_stream(streams[i]);
                    resumes[i] += 1;
                }
            }
            1 => {
                let i = rng.random_range(0..n);
                if resumes[i] % 2 == 1 {
                    ctx.backend().resume_stream(streams[i]);
                    resumes[i] += 1;
                }
            }
            2..=5 => {
                // Runs on one stream, as a program's: most requests on the last one's stream.
                let i = if rng.random_range(0..4) == 0 {
                    rng.random_range(0..n)
                } else {
                    last
                };
                last = i;
                let size = rng.random_range(1..(3 << 20));
                let (h, p) = ctx.interop().alloc_on(desc(size), streams[i])?;
                for (j, s) in streams.iter().enumerate() {
                    if resumes[j] % 2 == 1 && !ctx.backend().is_held(*s) {
                        resumes[j] += 1;
                    }
                }
                for r in &released {
                    let j = streams.iter().position(|s| *s == r.stream).unwrap_or(0);
                    let overlaps = p.address < r.end && r.start < p.address + size;
                    assert!(
                        !(overlaps && r.stream != streams[i] && resumes[j] == r.resumes),
                        "seed {seed} step {step}: stream {:?} got memory {:?} still uses",
                        streams[i],
                        r.stream
                    );
                }
                let mut uses = Vec::new();
                if rng.random_range(0..4) == 0 {
                    let u = rng.random_range(0..n);
                    if u != i {
                        ctx.interop().record_stream(h, streams[u])?;
                        uses.push(u);
                    }
                }
                live.push((h, p.address, size, i, uses));
            }
            _ => {
                if live.is_empty() {
                    continue;
                }
                let k = rng.random_range(0..live.len());
                let (h, address, size, i, uses) = live.swap_remove(k);
                let in_flight = std::iter::once(i)
                    .chain(uses.iter().copied())
                    .any(|s| resumes[s] % 2 == 1);
                if bytes && in_flight {
                    // SAFETY: the host backend's address of `size` bytes the allocation owns.
                    unsafe { std::ptr::write_bytes(address as *mut u8, IN_FLIGHT, size as usize) };
                }
                ctx.release(h)?;
                for s in std::iter::once(i).chain(uses) {
                    if resumes[s] % 2 == 1 {
                        released.push(Released {
                            start: address,
                            end: address + size,
                            stream: streams[s],
                            resumes: resumes[s],
                        });
                    }
                }
            }
        }
        // Only in-flight releases matter.
        released.retain(|r| {
            let j = streams.iter().position(|s| *s == r.stream).unwrap_or(0);
            resumes[j] == r.resumes
        });
        if bytes {
            for r in &released {
                // Taken again by a live allocation (on the releasing stream, as checked above):
                // its bytes are that allocation's now.
                if live.iter().any(|l| l.1 < r.end && r.start < l.1 + l.2) {
                    continue;
                }
                // SAFETY: released but in flight on a held stream: the segment keeps the range
                // (reserved host memory; pages given back read as the model's poison).
                let now = unsafe {
                    std::slice::from_raw_parts(r.start as *const u8, (r.end - r.start) as usize)
                };
                assert!(
                    now.iter().all(|&b| b == IN_FLIGHT),
                    "seed {seed} step {step}: pages {:?} released still used went away",
                    r.stream
                );
            }
        }
    }
    for (h, ..) in live {
        ctx.release(h)?;
    }
    ctx.observe().audit().check()?;
    Ok(())
}

#[test]
fn memory_goes_back_to_the_device_only_after_its_stream_passed() -> anyhow::Result<()> {
    // Fixed blocks: an empty block past the threshold goes back only once A passed.
    let c = ctx(ContextDesc {
        release_threshold: 0,
        ..Default::default()
    });
    c.backend().hold_stream(A);
    let (h, _) = c.interop().alloc_on(desc(8 << 20), A)?;
    let held = c.stats().reserved;
    c.release(h)?;
    assert!(c.backend().is_held(A));
    assert_eq!(c.stats().reserved, held, "a block went back under A's work");
    c.backend().resume_stream(A);
    let (h, _) = c.interop().alloc_on(desc(4096), B)?;
    c.release(h)?;
    c.memory().trim()?;
    assert_eq!(c.stats().reserved, 0);
    // Segments: pages and the segment's end go back only once A passed; until then the
    // released bytes are A's as they were.
    let s = segments(ContextDesc {
        release_threshold: 0,
        ..Default::default()
    });
    s.backend().hold_stream(A);
    let (keep, _) = s.interop().alloc_on(desc(4096), A)?;
    let (h, p) = s.interop().alloc_on(desc(1 << 20), A)?;
    // SAFETY: the host backend's address of 1 MiB the allocation owns.
    unsafe { std::ptr::write_bytes(p.address as *mut u8, 0x11, 1 << 20) };
    s.release(h)?;
    assert!(s.backend().is_held(A));
    // SAFETY: released but not given back (the check below): still host memory of the block.
    let after = unsafe { std::slice::from_raw_parts(p.address as *const u8, 1 << 20) };
    assert!(
        after.iter().all(|&b| b == 0x11),
        "pages went back under A's work"
    );
    s.backend().resume_stream(A);
    s.release(keep)?;
    s.observe().audit().check()?;
    Ok(())
}

#[test]
fn a_zeroed_allocation_on_a_busy_stream_is_cleared_after_the_stream_passed() -> anyhow::Result<()> {
    let s = segments(ContextDesc::default());
    s.backend().hold_stream(A);
    let (h, p) = s.interop().alloc_on(desc(1 << 20), A)?;
    // SAFETY: the host backend's address of 1 MiB the allocation owns.
    unsafe { std::ptr::write_bytes(p.address as *mut u8, 0x11, 1 << 20) };
    s.release(h)?;
    let (z, q) = s.interop().alloc_on(AllocDesc::new("zeroed", 1 << 20), A)?;
    if q.address == p.address {
        assert!(
            !s.backend().is_held(A),
            "vramkit's queue cleared memory stream A still used"
        );
    }
    // SAFETY: the host backend's address of 1 MiB the allocation owns.
    let bytes = unsafe { std::slice::from_raw_parts(q.address as *const u8, 1 << 20) };
    assert!(bytes.iter().all(|&b| b == 0));
    s.release(z)?;
    Ok(())
}

#[test]
fn forgetting_a_stream_confirms_its_releases() -> anyhow::Result<()> {
    let s = segments(ContextDesc::default());
    s.backend().hold_stream(A);
    let (h, _) = s.interop().alloc_on(desc(1 << 20), A)?;
    s.release(h)?;
    assert!(s.backend().is_held(A));
    s.interop().forget_stream(A)?;
    assert!(
        !s.backend().is_held(A),
        "forget_stream returned before A passed"
    );
    // Nothing marks A afterwards: holding it again and allocating elsewhere does not wait.
    s.backend().hold_stream(A);
    let (h, _) = s.interop().alloc_on(desc(1 << 20), B)?;
    assert!(s.backend().is_held(A));
    s.release(h)?;
    s.backend().resume_stream(A);
    Ok(())
}
