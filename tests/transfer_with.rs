//! `upload_with` / `download_with`: the caller fills and reads staging in place, chunk by chunk.
//! Every result is checked byte for byte against the source and the bytes around the range
//! against what was there before; on host memory, wgpu and CUDA.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, Error, MemoryKind};

/// A small staging slot, so a few KiB cross many chunk boundaries.
const CHUNK: u64 = 4096;

fn desc() -> ContextDesc {
    ContextDesc {
        staging_chunk: CHUNK,
        staging_slots: 2,
        ..Default::default()
    }
}

backend_tests!(
    round_trips_at_chunk_boundaries,
    bad_ranges_are_typed_errors,
    stale_handles_are_refused,
    a_panicking_closure_leaves_the_context_usable,
    staging_stays_in_the_budget,
    a_transfer_inside_the_closure_is_refused,
    a_transfer_back_through_another_context_is_refused,
    host_visible_memory_round_trips,
);

/// Uploads `src` into `at..at + src.len()` with `upload_with`, checking the calls: chunks in
/// order, contiguous, none larger than the slot.
fn upload_with<B: Backend>(ctx: &Context<B>, h: vramkit::BufferHandle, at: u64, src: &[u8]) {
    let mut next = 0u64;
    ctx.transfers()
        .upload_with(h, at..at + src.len() as u64, |off, mut chunk| {
            assert_eq!(off, next, "chunks in order");
            assert!(!chunk.is_empty() && chunk.len() as u64 <= CHUNK);
            let from = off as usize;
            chunk.copy_from_slice(&src[from..from + chunk.len()]);
            next += chunk.len() as u64;
        })
        .expect("upload_with");
    assert_eq!(next, src.len() as u64, "every byte offered once");
}

fn download_with<B: Backend>(
    ctx: &Context<B>,
    h: vramkit::BufferHandle,
    at: u64,
    len: u64,
) -> Vec<u8> {
    let mut out = Vec::new();
    ctx.transfers()
        .download_with(h, at..at + len, |off, chunk| {
            assert_eq!(off, out.len() as u64, "chunks in order");
            assert!(!chunk.is_empty() && chunk.len() as u64 <= CHUNK);
            out.extend_from_slice(chunk);
        })
        .expect("download_with");
    out
}

fn round_trips_at_chunk_boundaries<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    let c = CHUNK as usize;
    for len in [0, 1, 7, c - 1, c, c + 1, 5 * c + 3] {
        for at in [0u64, 8, 3] {
            let size = len as u64 + at + 5;
            let h = ctx.alloc(AllocDesc::new("with", size)).expect("alloc");
            let before = random_bytes(size as usize, 1 + len as u64);
            ctx.upload(h, &before).expect("upload");
            let src = random_bytes(len, 100 + at);
            upload_with(&ctx, h, at, &src);

            let mut want = before.clone();
            want[at as usize..at as usize + len].copy_from_slice(&src);
            let got = ctx.download(h).expect("download");
            assert!(
                got == want,
                "len {len} at {at}: upload_with differs from the source"
            );
            let back = download_with(&ctx, h, at, len as u64);
            assert!(
                back == src,
                "len {len} at {at}: download_with differs from the source"
            );
            // The range up to the allocation's end (an unaligned end on the device).
            let tail = download_with(&ctx, h, at, size - at);
            assert!(
                tail == want[at as usize..],
                "len {len} at {at}: tail read differs"
            );
            ctx.release(h).expect("release");
        }
    }
    ctx.observe()
        .audit()
        .check()
        .expect("audit after transfers");
}

fn bad_ranges_are_typed_errors<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    let h = ctx.alloc(AllocDesc::new("small", 100)).expect("alloc");
    let mut called = false;
    #[allow(
        clippy::reversed_empty_ranges,
        reason = "the reversed range is the test"
    )]
    let bad = [10..5, 0..101, 96..104, 200..300, u64::MAX - 1..u64::MAX];
    for r in bad {
        let up = ctx
            .transfers()
            .upload_with(h, r.clone(), |_, _| called = true);
        assert!(
            matches!(up, Err(Error::InvalidRange { .. })),
            "{r:?}: upload_with gave {up:?}"
        );
        let down = ctx
            .transfers()
            .download_with(h, r.clone(), |_, _| called = true);
        assert!(
            matches!(down, Err(Error::InvalidRange { .. })),
            "{r:?}: download_with gave {down:?}"
        );
    }
    assert!(!called, "a closure ran for a bad range");
    // An empty range at the end is fine and calls nothing.
    ctx.transfers()
        .upload_with(h, 100..100, |_, _| called = true)
        .expect("empty");
    assert!(!called);
    ctx.release(h).expect("release");
}

fn stale_handles_are_refused<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    let h = ctx.alloc(AllocDesc::new("gone", 64)).expect("alloc");
    ctx.release(h).expect("release");
    let up = ctx
        .transfers()
        .upload_with(h, 0..64, |_, _| panic!("closure on a stale handle"));
    assert!(
        matches!(up, Err(Error::StaleHandle { .. })),
        "upload_with gave {up:?}"
    );
    let down = ctx
        .transfers()
        .download_with(h, 0..64, |_, _| panic!("closure on a stale handle"));
    assert!(
        matches!(down, Err(Error::StaleHandle { .. })),
        "download_with gave {down:?}"
    );
}

/// Documented behaviour: the panic propagates; chunks before it were written, the rest keeps
/// its bytes; the ring and the budget are as before, and later transfers work.
fn a_panicking_closure_leaves_the_context_usable<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    let len = 6 * CHUNK as usize;
    let h = ctx
        .alloc(AllocDesc::new("panics", len as u64))
        .expect("alloc");
    let before = random_bytes(len, 7);
    ctx.upload(h, &before).expect("upload");
    let staging = ctx.stats().staging;
    let src = random_bytes(len, 8);
    let r = catch_unwind(AssertUnwindSafe(|| {
        ctx.transfers()
            .upload_with(h, 0..len as u64, |off, mut chunk| {
                if off == 2 * CHUNK {
                    panic!("the producer failed");
                }
                chunk.copy_from_slice(&src[off as usize..off as usize + chunk.len()]);
            })
    }));
    assert!(r.is_err(), "the panic propagates");
    let got = ctx.download(h).expect("download after the panic");
    let cut = 2 * CHUNK as usize;
    assert!(
        got[..cut] == src[..cut],
        "chunks before the panic were written"
    );
    assert!(
        got[cut..] == before[cut..],
        "bytes after the panic keep their values"
    );

    let r = catch_unwind(AssertUnwindSafe(|| {
        ctx.transfers().download_with(h, 0..len as u64, |off, _| {
            assert!(off < 3 * CHUNK, "the reader failed");
        })
    }));
    assert!(r.is_err(), "the panic propagates");

    // The ring still works both ways, and holds no more staging than before.
    upload_with(&ctx, h, 0, &src);
    assert!(download_with(&ctx, h, 0, len as u64) == src);
    assert!(ctx.download(h).expect("download") == src);
    assert!(ctx.stats().staging <= staging.max(ctx.transfers().staging_capacity()));
    ctx.observe().audit().check().expect("audit after panics");
    ctx.release(h).expect("release");
    ctx.memory().trim().expect("trim");
    assert_eq!(ctx.stats().staging, 0, "no staging leaked");
}

fn staging_stays_in_the_budget<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(1 << 20),
        ..desc()
    });
    let len = 64 * CHUNK;
    let h = ctx.alloc(AllocDesc::new("big", len)).expect("alloc");
    let src = random_bytes(len as usize, 3);
    upload_with(&ctx, h, 0, &src);
    assert!(download_with(&ctx, h, 0, len) == src);
    let s = ctx.stats();
    assert!(s.staging > 0, "staging is counted");
    assert!(
        s.staging <= ctx.transfers().staging_capacity(),
        "{} > the rings' capacity",
        s.staging
    );
    assert!(
        s.reserved >= s.staging && s.reserved <= 1 << 20,
        "reserved {}",
        s.reserved
    );
    ctx.observe()
        .audit()
        .check()
        .expect("audit after transfers");
    ctx.release(h).expect("release");
    ctx.memory().trim().expect("trim");
    assert_eq!(ctx.stats().staging, 0);
}

fn a_transfer_inside_the_closure_is_refused<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    let h = ctx.alloc(AllocDesc::new("outer", 64)).expect("alloc");
    let mut inner = None;
    let mut others = None;
    let mut over = None;
    ctx.transfers()
        .upload_with(h, 0..64, |_, mut chunk| {
            inner = Some(ctx.upload(h, &[1; 4]));
            // What needs the ring is refused; the rest works (no deadlock), and a request over
            // the budget is refused as over the budget.
            let scratch = ctx
                .alloc(AllocDesc::new("scratch", 16))
                .expect("alloc inside");
            ctx.release(scratch).expect("release inside");
            others = Some((
                ctx.transfers().staging_chunk(),
                ctx.transfers().staging_capacity(),
                ctx.memory().max_batch(1000).is_ok(),
                ctx.memory().trim().is_ok(),
                matches!(ctx.download(h), Err(Error::Unsupported { .. })),
            ));
            ctx.memory()
                .set_budget(Some(ctx.stats().reserved + 4096))
                .expect("budget");
            let big = ctx.stats().reserved + (1 << 20);
            over = Some(ctx.alloc(AllocDesc::new("over", big)).map(|_| ()));
            ctx.memory().set_budget(None).expect("budget");
            chunk.fill(9);
        })
        .expect("outer upload");
    assert!(
        matches!(inner, Some(Err(Error::Unsupported { .. }))),
        "a nested transfer gave {inner:?}"
    );
    assert_eq!(others, Some((CHUNK, 4 * CHUNK, true, true, true)));
    assert!(
        matches!(over, Some(Err(Error::OverBudget { .. }))),
        "a request over the budget inside the closure gave {over:?}"
    );
    // After the closure, all of it works again.
    assert!(ctx.memory().max_batch(1000).is_ok());
    assert_eq!(ctx.download(h).expect("download"), vec![9; 64]);
    ctx.release(h).expect("release");
}

/// A's closure runs a transfer of B, whose closure comes back to A: refused (A's ring is held),
/// not a deadlock; B's own transfer goes through.
fn a_transfer_back_through_another_context_is_refused<B: Backend>(mk: Mk<B>) {
    let (a, b) = (mk(desc()), mk(desc()));
    let (ha, hb) = (
        a.alloc(AllocDesc::new("a", 64)).expect("alloc"),
        b.alloc(AllocDesc::new("b", 64)).expect("alloc"),
    );
    let mut back = None;
    a.transfers()
        .upload_with(ha, 0..64, |_, mut chunk| {
            b.transfers()
                .upload_with(hb, 0..64, |_, mut inner| {
                    back = Some(a.download(ha));
                    inner.fill(5);
                })
                .expect("b's transfer inside a's closure");
            chunk.fill(7);
        })
        .expect("a's transfer");
    assert!(
        matches!(back, Some(Err(Error::Unsupported { .. }))),
        "a transfer back to A gave {back:?}"
    );
    assert_eq!(a.download(ha).expect("download"), vec![7; 64]);
    assert_eq!(b.download(hb).expect("download"), vec![5; 64]);
}

/// The staging copy (rayon pieces, streaming stores after an unaligned head, a short tail)
/// equals `copy_from_slice` and writes nothing outside its range.
#[test]
fn copy_to_staging_equals_a_plain_copy() {
    for len in [
        0usize,
        1,
        63,
        4095,
        4096,
        4097 + 64,
        (1 << 20) + 13,
        (3 << 20) + 5,
    ] {
        let src = random_bytes(len, len as u64);
        for shift in [0usize, 1, 7, 16, 33] {
            let mut dst = vec![0xA5u8; len + shift + 40];
            let view = vramkit::transfers::WriteOnly::from_mut(&mut dst[shift..shift + len]);
            vramkit::transfers::copy_to_staging(&src, view).expect("copy");
            assert!(
                dst[shift..shift + len] == src[..],
                "len {len} shift {shift}: differs"
            );
            assert!(
                dst[..shift]
                    .iter()
                    .chain(&dst[shift + len..])
                    .all(|&b| b == 0xA5),
                "len {len} shift {shift}: wrote outside the range"
            );
        }
    }
    // Lengths that differ are a typed error, and nothing is written.
    let mut dst = [0xA5u8; 64];
    let view = vramkit::transfers::WriteOnly::from_mut(&mut dst[..32]);
    match vramkit::transfers::copy_to_staging(&[1u8; 33], view) {
        Err(Error::ShapeMismatch { .. }) => {}
        other => panic!("33 bytes into 32 gave {other:?}"),
    }
    assert!(dst.iter().all(|&b| b == 0xA5), "a refused copy wrote");
}

/// Host-visible (unified) allocations take the temporary path with the same calls.
fn host_visible_memory_round_trips<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    let len = 3 * CHUNK as usize + 5;
    let h = match ctx.alloc(AllocDesc::new("unified", len as u64 + 3).kind(MemoryKind::Unified)) {
        Ok(h) => h,
        Err(Error::Unsupported { reason, .. }) => {
            eprintln!("host_visible_memory_round_trips: skipped, no unified memory: {reason}");
            return;
        }
        Err(e) => panic!("alloc: {e}"),
    };
    let before = random_bytes(len + 3, 11);
    ctx.upload(h, &before).expect("upload");
    let src = random_bytes(len, 12);
    upload_with(&ctx, h, 1, &src);
    let mut want = before;
    want[1..1 + len].copy_from_slice(&src);
    assert!(
        ctx.download(h).expect("download") == want,
        "upload_with differs"
    );
    assert!(
        download_with(&ctx, h, 1, len as u64) == src,
        "download_with differs"
    );
    ctx.release(h).expect("release");
}
