//! Released (stale) and foreign handles in every call that takes a handle.

use std::fmt::Debug;

use vramkit::backend::host::HostBackend;
use vramkit::StaleReason;
use vramkit::{AllocDesc, BufferHandle, Context, Error, MemoryAdvice, MemoryKind, Result};
use vramkit_kernels::image::{self, Blur, ColorOp, ImageView, PixelFormat, ResizeFilter};
use vramkit_kernels::{self as kernels, MatmulDims, MatmulKernel};

use crate::check::{alloc, foreign, host, released, still_usable};
use crate::harness::Case;

type Ctx = Context<HostBackend>;

/// `op` with a released handle: `StaleHandle { Released }`.
fn stale_in<T: Debug>(op: impl FnOnce(&Ctx, BufferHandle) -> Result<T>) {
    let ctx = host();
    let h = released(&ctx);
    expect_err!(
        op(&ctx, h),
        Error::StaleHandle {
            reason: StaleReason::Released
        },
        ["released"],
        ["live handles"]
    );
    still_usable(&ctx);
}

/// `op` with a live handle of another context: `StaleHandle { ForeignContext }`, and the other
/// context's allocation untouched.
fn foreign_in<T: Debug>(op: impl FnOnce(&Ctx, BufferHandle) -> Result<T>) {
    let (other, h) = foreign();
    other.upload(h, &[9; 64]).expect("upload");
    let ctx = host();
    let _decoy = alloc(&ctx, "decoy", 64);
    expect_err!(
        op(&ctx, h),
        Error::StaleHandle {
            reason: StaleReason::ForeignContext
        },
        ["another context"],
        ["use it with the context"]
    );
    assert!(
        other.download(h).expect("download") == vec![9; 64],
        "WRONG ANSWER: the foreign allocation changed"
    );
}

fn img(h: BufferHandle) -> ImageView {
    ImageView::new(h, 4, 4, PixelFormat::Rgba8)
}

const D2: MatmulDims = MatmulDims { m: 2, n: 2, k: 2 };

macro_rules! handle_cases {
    ($($stale:ident, $foreign:ident: $op:expr;)*) => {
        $(
            fn $stale() {
                stale_in($op)
            }
            fn $foreign() {
                foreign_in($op)
            }
        )*
    };
}

handle_cases! {
    release_stale, release_foreign: |c: &Ctx, h| c.release(h);
    size_of_stale, size_of_foreign: |c: &Ctx, h| c.observe().size_of(h);
    upload_stale, upload_foreign: |c: &Ctx, h| c.upload(h, &[1; 8]);
    upload_at_stale, upload_at_foreign: |c: &Ctx, h| c.transfers().upload_at(h, 8, &[1; 8]);
    reader_stale, reader_foreign: |c: &Ctx, h| c.transfers().upload_from_reader(h, &[1u8; 8][..]);
    download_stale, download_foreign: |c: &Ctx, h| c.download(h).map(|v| v.len());
    download_into_stale, download_into_foreign: |c: &Ctx, h| c.transfers().download_into(h, 0, &mut [0; 8]);
    info_stale, info_foreign: |c: &Ctx, h| c.observe().allocation_info(h);
    advise_stale, advise_foreign: |c: &Ctx, h| c.memory().advise(h, MemoryAdvice::ReadMostly);
    scale_stale, scale_foreign: |c: &Ctx, h| {
        let y = alloc(c, "y", 64);
        kernels::scale(c, h, y, 2.0, 1.0)
    };
    axpy_stale, axpy_foreign: |c: &Ctx, h| {
        let x = alloc(c, "x", 64);
        kernels::axpy(c, 2.0, x, h)
    };
    add_stale, add_foreign: |c: &Ctx, h| {
        let (x, y) = (alloc(c, "x", 64), alloc(c, "y", 64));
        kernels::add(c, x, y, h)
    };
    matmul_a_stale, matmul_a_foreign: |c: &Ctx, h| {
        let (b, out) = (alloc(c, "b", 16), alloc(c, "c", 16));
        kernels::matmul(c, h, b, out, D2)
    };
    matmul_c_stale, matmul_c_foreign: |c: &Ctx, h| {
        let (a, b) = (alloc(c, "a", 16), alloc(c, "b", 16));
        kernels::matmul_with(c, a, b, h, D2, MatmulKernel::Vendor)
    };
    blur_stale, blur_foreign: |c: &Ctx, h| {
        let dst = alloc(c, "dst", 64);
        image::blur(c, &img(h), &img(dst), [0, 0], Blur::Box { radius: 1 })
    };
    color_stale, color_foreign: |c: &Ctx, h| {
        let src = alloc(c, "src", 64);
        image::color(c, &img(src), &img(h), [0, 0], ColorOp::Luma)
    };
    unpack_stale, unpack_foreign: |c: &Ctx, h| {
        let dst = alloc(c, "dst", 256);
        image::unpack_rgba8(c, &img(h), &ImageView::new(dst, 4, 4, PixelFormat::Rgba32F), [0, 0])
    };
    resize_stale, resize_foreign: |c: &Ctx, h| {
        let src = alloc(c, "src", 64);
        image::resize(c, &img(src), &ImageView::new(h, 2, 2, PixelFormat::Rgba8), ResizeFilter::Area)
    };
}

/// A released handle whose slot a new allocation took: the old handle is still refused, and
/// the new allocation is not touched through it.
fn reused_slot() {
    let ctx = host();
    let old = released(&ctx);
    let new = alloc(&ctx, "new", 64);
    ctx.upload(new, &[5; 64]).expect("upload");
    expect_err!(
        ctx.upload(old, &[1; 64]),
        Error::StaleHandle {
            reason: StaleReason::Released
        },
        ["released"],
        ["live handles"]
    );
    assert!(
        ctx.download(new).expect("download") == vec![5; 64],
        "WRONG ANSWER: a stale handle wrote into the allocation that reused its slot"
    );
}

/// A handle of a context that was dropped, used with a new one.
fn dropped_context() {
    let h = {
        let gone = host();
        let h = alloc(&gone, "orphan", 64);
        gone.release(h).expect("release");
        h
    };
    let ctx = host();
    let _decoy = alloc(&ctx, "decoy", 64);
    expect_err!(
        ctx.download(h),
        Error::StaleHandle {
            reason: StaleReason::ForeignContext
        },
        ["another context"],
        ["use it with the context"]
    );
}

/// Releasing a handle twice keeps the counters right.
fn double_release_counts() {
    let ctx = host();
    let h = ctx
        .alloc(AllocDesc::new("twice", 4096).kind(MemoryKind::Unified))
        .expect("alloc");
    ctx.release(h).expect("release");
    let _ = ctx.release(h);
    let s = ctx.stats();
    assert!(
        s.in_use == 0 && s.live == 0 && s.releases == 1,
        "WRONG ANSWER: after a double release the counters say {} bytes in {} live allocations, \
         {} releases",
        s.in_use,
        s.live,
        s.releases
    );
    ctx.observe().audit().check().expect("audit");
}

pub const CASES: &[Case] = &[
    Case::new("release: released handle (double release)", release_stale),
    Case::new("release: foreign handle", release_foreign),
    Case::new(
        "release: double release keeps counters",
        double_release_counts,
    ),
    Case::new("size_of: released handle", size_of_stale),
    Case::new("size_of: foreign handle", size_of_foreign),
    Case::new("upload: released handle", upload_stale),
    Case::new("upload: foreign handle", upload_foreign),
    Case::new("upload: released handle whose slot was reused", reused_slot),
    Case::new("upload_at: released handle", upload_at_stale),
    Case::new("upload_at: foreign handle", upload_at_foreign),
    Case::new("upload_from_reader: released handle", reader_stale),
    Case::new("upload_from_reader: foreign handle", reader_foreign),
    Case::new("download: released handle", download_stale),
    Case::new("download: foreign handle", download_foreign),
    Case::new("download: handle of a dropped context", dropped_context),
    Case::new("download_into: released handle", download_into_stale),
    Case::new("download_into: foreign handle", download_into_foreign),
    Case::new("allocation_info: released handle", info_stale),
    Case::new("allocation_info: foreign handle", info_foreign),
    Case::new("advise: released handle", advise_stale),
    Case::new("advise: foreign handle", advise_foreign),
    Case::new("kernels::scale: released x", scale_stale),
    Case::new("kernels::scale: foreign x", scale_foreign),
    Case::new("kernels::axpy: released y", axpy_stale),
    Case::new("kernels::axpy: foreign y", axpy_foreign),
    Case::new("kernels::add: released z", add_stale),
    Case::new("kernels::add: foreign z", add_foreign),
    Case::new("kernels::matmul: released A", matmul_a_stale),
    Case::new("kernels::matmul: foreign A", matmul_a_foreign),
    Case::new("kernels::matmul_with(Vendor): released C", matmul_c_stale),
    Case::new("kernels::matmul_with(Vendor): foreign C", matmul_c_foreign),
    Case::new("image::blur: released source", blur_stale),
    Case::new("image::blur: foreign source", blur_foreign),
    Case::new("image::color: released destination", color_stale),
    Case::new("image::color: foreign destination", color_foreign),
    Case::new("image::unpack_rgba8: released source", unpack_stale),
    Case::new("image::unpack_rgba8: foreign source", unpack_foreign),
    Case::new("image::resize: released destination", resize_stale),
    Case::new("image::resize: foreign destination", resize_foreign),
];
