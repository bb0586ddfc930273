//! `StagingBuffer`: staging memory the caller owns, filled once in place and uploaded by the
//! device's copy. Results are checked byte for byte; the budget counts it as staging and
//! audit() agrees; on host memory, wgpu and CUDA.

mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, ContextDesc, Error};

backend_tests!(
    filled_once_uploaded_twice,
    counted_in_the_budget,
    bad_ranges_and_foreign_buffers_are_refused,
);

fn filled_once_uploaded_twice<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    for len in [1usize, 7, 4096, (1 << 20) + 3] {
        // The second copy starts word-aligned and ends at the allocation's (unaligned) end.
        let size = (len as u64).next_multiple_of(4) + 64 + len as u64;
        let h = ctx.alloc(AllocDesc::new("dst", size)).expect("alloc");
        let before = random_bytes(size as usize, 5);
        ctx.upload(h, &before).expect("upload");
        let src = random_bytes(len, len as u64);
        let mut s = ctx
            .transfers()
            .alloc_staging(len as u64)
            .expect("alloc_staging");
        assert_eq!(s.len(), len as u64);
        ctx.transfers()
            .fill_staging(&mut s, |mut v| v.copy_from_slice(&src))
            .expect("fill");
        // Twice from one fill: at 0 and at the end (an unaligned length ends there).
        let end = size - len as u64;
        let mut want = before.clone();
        let at0 = ctx.transfers().upload_staging(&mut s, h, 0);
        if len % 4 == 0 {
            at0.expect("upload at 0");
            want[..len].copy_from_slice(&src);
        } else {
            // Whole words only: an unaligned end inside the allocation is refused.
            assert!(
                matches!(at0, Err(Error::InvalidRange { .. })),
                "len {len}: {at0:?}"
            );
        }
        ctx.transfers()
            .upload_staging(&mut s, h, end)
            .expect("upload at the end");
        want[end as usize..].copy_from_slice(&src);
        // Refilling waits for the copies that read it: the device sees the old bytes.
        let other = random_bytes(len, 99);
        ctx.transfers()
            .fill_staging(&mut s, |mut v| v.copy_from_slice(&other))
            .expect("refill");
        let got = ctx.download(h).expect("download");
        assert!(
            got == want,
            "len {len}: the device holds other bytes than were sent"
        );
        ctx.transfers()
            .upload_staging(&mut s, h, end)
            .expect("upload the refill");
        assert!(
            ctx.download(h).expect("download")[end as usize..] == other[..],
            "len {len}: refill"
        );
        ctx.transfers().free_staging(s).expect("free");
        ctx.release(h).expect("release");
    }
    ctx.observe().audit().check().expect("audit");
}

fn counted_in_the_budget<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(16 << 20),
        ..Default::default()
    });
    let before = ctx.stats();
    let s = ctx.transfers().alloc_staging(1001).expect("alloc_staging");
    let during = ctx.stats();
    assert_eq!(
        during.staging,
        before.staging + 1004,
        "1001 bytes held as 1004 (whole words)"
    );
    assert_eq!(during.reserved, before.reserved + 1004);
    ctx.observe()
        .audit()
        .check()
        .expect("audit with a staging buffer");
    assert!(matches!(
        ctx.transfers().alloc_staging(32 << 20),
        Err(Error::OverBudget { .. })
    ));
    assert!(matches!(
        ctx.transfers().alloc_staging(0),
        Err(Error::ZeroSize { .. })
    ));
    ctx.transfers().free_staging(s).expect("free");
    let after = ctx.stats();
    assert_eq!(
        (after.staging, after.reserved),
        (before.staging, before.reserved)
    );
    ctx.observe().audit().check().expect("audit after freeing");
}

fn bad_ranges_and_foreign_buffers_are_refused<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let other = mk(ContextDesc::default());
    let h = ctx.alloc(AllocDesc::new("dst", 100)).expect("alloc");
    let mut s = ctx.transfers().alloc_staging(8).expect("alloc_staging");
    ctx.transfers()
        .fill_staging(&mut s, |mut v| v.fill(1))
        .expect("fill");
    for at in [93, 2, 100, u64::MAX - 3] {
        let r = ctx.transfers().upload_staging(&mut s, h, at);
        assert!(
            matches!(r, Err(Error::InvalidRange { .. })),
            "at {at}: {r:?}"
        );
    }
    assert_eq!(
        ctx.download(h).expect("download"),
        vec![0; 100],
        "nothing was written"
    );
    let oh = other.alloc(AllocDesc::new("other", 100)).expect("alloc");
    assert!(matches!(
        other.transfers().upload_staging(&mut s, oh, 0),
        Err(Error::StaleHandle { .. })
    ));
    assert!(matches!(
        other.transfers().fill_staging(&mut s, |_| ()),
        Err(Error::StaleHandle { .. })
    ));
    ctx.release(h).expect("release");
    assert!(matches!(
        ctx.transfers().upload_staging(&mut s, h, 0),
        Err(Error::StaleHandle { .. })
    ));
    ctx.transfers().free_staging(s).expect("free");
    other.release(oh).expect("release");
}
