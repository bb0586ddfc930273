//! Owning handles (`Context::alloc_owned`): released exactly once, by drop, by an explicit
//! `release`, never after `into_handle`, also when a panic unwinds past them; a release that
//! fails in `Drop` comes back from the next allocation. Counted by the context's statistics.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use common::Mk;
use vramkit::backend::Backend;
use vramkit::observe::MemoryStats;
use vramkit::{AllocDesc, Context, ContextDesc, ErrorKind, Owned};

backend_tests!(
    dropped_owned_handles_release_once,
    explicit_release_and_into_handle,
    owned_handles_release_when_a_panic_unwinds,
    a_handle_released_behind_its_back_is_no_later_error,
);

/// (live allocations, releases so far, bytes requested by live allocations).
fn counts(s: &MemoryStats) -> (usize, u64, u64) {
    (s.live, s.releases, s.requested)
}

fn dropped_owned_handles_release_once<B: Backend>(mk: Mk<B>) {
    let ctx = Arc::new(mk(ContextDesc::default()));
    let before = counts(&ctx.stats());
    {
        let a = ctx.alloc_owned(AllocDesc::new("a", 1000)).expect("alloc");
        let b = ctx.alloc_owned(AllocDesc::new("b", 24)).expect("alloc");
        // Deref to the handle: every call that takes one takes `*a`.
        ctx.upload_slice(*a, &[3u8; 1000]).expect("upload");
        ctx.upload_slice(b.handle(), &[1.5f64; 3]).expect("upload");
        assert_eq!(ctx.download_vec::<f64>(*b).expect("download"), [1.5; 3]);
        assert_eq!(ctx.observe().size_of(*a).expect("size"), 1000);
        assert_eq!(
            counts(&ctx.stats()),
            (before.0 + 2, before.1, before.2 + 1024)
        );
        // Each holds the context.
        assert_eq!(Arc::strong_count(&ctx), 3);
        assert!(Arc::ptr_eq(a.context(), &ctx));
        drop(a);
        assert_eq!(
            counts(&ctx.stats()),
            (before.0 + 1, before.1 + 1, before.2 + 24)
        );
    }
    assert_eq!(counts(&ctx.stats()), (before.0, before.1 + 2, before.2));
    assert_eq!(Arc::strong_count(&ctx), 1);
    // Dropped on another thread, and outliving the caller's `Arc`.
    let c = ctx.alloc_owned(AllocDesc::new("c", 64)).expect("alloc");
    let weak = Arc::downgrade(&ctx);
    drop(ctx);
    let ctx = weak.upgrade().expect("the Owned keeps the context");
    std::thread::spawn(move || drop(c)).join().expect("thread");
    assert_eq!(counts(&ctx.stats()), (before.0, before.1 + 3, before.2));
    // Nothing was recorded for later: the next allocation succeeds.
    ctx.alloc(AllocDesc::new("next", 16)).expect("alloc");
}

fn explicit_release_and_into_handle<B: Backend>(mk: Mk<B>) {
    let ctx = Arc::new(mk(ContextDesc::default()));
    let before = counts(&ctx.stats());
    let a = ctx.alloc_owned(AllocDesc::new("a", 256)).expect("alloc");
    let h = *a;
    a.release().expect("explicit release");
    assert_eq!(counts(&ctx.stats()), (before.0, before.1 + 1, before.2));
    // The handle is released (once: the Owned's drop did not release again).
    assert_eq!(
        ctx.observe().size_of(h).unwrap_err().kind(),
        ErrorKind::StaleHandle
    );
    ctx.alloc(AllocDesc::new("probe", 16))
        .expect("no error was recorded");
    let before = counts(&ctx.stats());

    let b = ctx.alloc_owned(AllocDesc::new("b", 512)).expect("alloc");
    ctx.upload_slice(*b, &[9u32; 128]).expect("upload");
    let h = b.into_handle();
    // Ownership given up: nothing released, the data is there.
    assert_eq!(
        counts(&ctx.stats()),
        (before.0 + 1, before.1, before.2 + 512)
    );
    assert_eq!(ctx.download_vec::<u32>(h).expect("download"), [9; 128]);
    ctx.release(h).expect("the caller releases it");
    assert_eq!(counts(&ctx.stats()), (before.0, before.1 + 1, before.2));

    // An explicit release that fails returns the error (not recorded for later).
    let c: Owned<B> = ctx.alloc_owned(AllocDesc::new("c", 64)).expect("alloc");
    ctx.release(*c).expect("released behind its back");
    assert_eq!(c.release().unwrap_err().kind(), ErrorKind::StaleHandle);
    ctx.alloc(AllocDesc::new("probe", 16))
        .expect("no error was recorded");
}

fn owned_handles_release_when_a_panic_unwinds<B: Backend>(mk: Mk<B>) {
    let ctx = Arc::new(mk(ContextDesc::default()));
    let before = counts(&ctx.stats());
    let result = catch_unwind(AssertUnwindSafe(|| {
        let a = ctx.alloc_owned(AllocDesc::new("a", 4096)).expect("alloc");
        let b = ctx.alloc_owned(AllocDesc::new("b", 100)).expect("alloc");
        ctx.upload_slice(*a, &[1f32; 1024]).expect("upload");
        assert_eq!(counts(&ctx.stats()).0, before.0 + 2);
        let _moved = b;
        panic!("a test panic with two owned allocations alive");
    }));
    assert!(result.is_err(), "the closure panicked");
    assert_eq!(counts(&ctx.stats()), (before.0, before.1 + 2, before.2));
    // A panic inside a transfer closure, with an owned allocation alive around it.
    let result = catch_unwind(AssertUnwindSafe(|| {
        let a = ctx.alloc_owned(AllocDesc::new("a", 64)).expect("alloc");
        ctx.transfers()
            .upload_with(*a, 0..64, |_, _| panic!("in the filler"))
    }));
    assert!(result.is_err(), "the filler panicked");
    assert_eq!(counts(&ctx.stats()), (before.0, before.1 + 3, before.2));
    // The context is usable afterwards.
    let c = ctx.alloc_owned(AllocDesc::new("c", 64)).expect("alloc");
    ctx.upload_slice(*c, &[5u16; 32]).expect("upload");
    assert_eq!(ctx.download_vec::<u16>(*c).expect("download"), [5; 32]);
}

fn a_handle_released_behind_its_back_is_no_later_error<B: Backend>(mk: Mk<B>) {
    let ctx: Arc<Context<B>> = Arc::new(mk(ContextDesc::default()));
    let a = ctx.alloc_owned(AllocDesc::new("a", 64)).expect("alloc");
    let b = ctx.alloc(AllocDesc::new("b", 64)).expect("alloc");
    ctx.release(*a).expect("released behind its back");
    let before = counts(&ctx.stats());
    drop(a); // finds a stale handle: logged, and nothing else released
    assert_eq!(counts(&ctx.stats()), before);
    assert!(
        ctx.observe().size_of(b).is_ok(),
        "the other allocation lives"
    );
    // The next allocation (another caller's business) does not get the drop's error.
    ctx.alloc(AllocDesc::new("next", 16)).expect("alloc");
}
