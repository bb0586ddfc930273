//! Transfers under a budget with no room for a staging buffer (and unified memory, which needs
//! none), memory advice on the wrong kind, and range errors on the GPU's transfer paths.

use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error, MemoryAdvice, MemoryKind};

use crate::check::{alloc, gpu, host, host_budget, host_with, still_usable, KIB};
use crate::harness::Case;
use crate::transfer::{unified, PAST};

pub const CASES: &[Case] = &[
    Case::new("upload: full budget, 1 KiB upload", staging_upload),
    Case::new("download: full budget", staging_download),
    Case::new("upload_from_reader: full budget", staging_reader),
    Case::new(
        "upload: budget of exactly one allocation",
        staging_exact_budget,
    ),
    Case::new(
        "upload (unified): full budget needs no staging",
        unified_full_budget,
    ),
    Case::new("advise: Device memory", advise_device),
    Case::new(
        "advise: Unified memory on the host is accepted",
        advise_unified,
    ),
    Case::isolated("upload_at (gpu): offset u64::MAX", gpu_upload_u64_max),
    Case::isolated(
        "download_into (gpu, unified): past the end",
        gpu_unified_past_end,
    ),
    Case::isolated("advise (gpu): Device memory", gpu_advise_device),
];

/// A context whose 256 KiB budget is filled with allocations, and one of them.
fn full() -> (Context<vramkit::backend::host::HostBackend>, BufferHandle) {
    let ctx = host_with(ContextDesc {
        budget: Some(256 * KIB),
        ..Default::default()
    });
    let first = alloc(&ctx, "filler", 4 * KIB);
    while ctx.alloc(AllocDesc::new("filler", 4 * KIB)).is_ok() {}
    (ctx, first)
}

fn staging_upload() {
    let (ctx, h) = full();
    let e = expect_err!(
        ctx.upload(h, &[1; 1024]),
        Error::Staging { .. },
        ["staging", "`ContextDesc::staging_chunk`"],
        ["lower", "raise the budget"]
    );
    names_direction(&e, "upload");
}

fn staging_download() {
    let (ctx, h) = full();
    let e = expect_err!(
        ctx.download(h),
        Error::Staging { .. },
        ["staging", "`ContextDesc::staging_chunk`"],
        ["lower", "raise the budget"]
    );
    names_direction(&e, "download");
}

fn staging_reader() {
    let (ctx, h) = full();
    let e = expect_err!(
        ctx.transfers().upload_from_reader(h, &[1u8; 1024][..]),
        Error::Staging { .. },
        ["staging", "`ContextDesc::staging_chunk`"],
        ["lower", "raise the budget"]
    );
    names_direction(&e, "upload");
}

/// The staging error names its direction in good English.
#[track_caller]
fn names_direction(e: &Error, direction: &str) {
    let msg = e.to_string();
    assert!(
        msg.contains(direction),
        "MESSAGE does not say `{direction}`: {msg}"
    );
    assert!(
        !msg.contains("an download"),
        "MESSAGE reads badly (\"an download\"): {msg}"
    );
}

/// A budget of 256 bytes holds one 256-byte allocation and no staging buffer.
fn staging_exact_budget() {
    let ctx = host_budget(256);
    let h = alloc(&ctx, "exact", 256);
    let e = expect_err!(
        ctx.upload(h, &[1; 16]),
        Error::Staging { .. },
        ["staging", "`ContextDesc::staging_chunk`"],
        ["lower", "raise the budget"]
    );
    names_direction(&e, "upload");
}

/// Unified memory is written directly: a full budget does not stop it.
fn unified_full_budget() {
    let ctx = host_budget(256 * KIB);
    let h = ctx
        .alloc(AllocDesc::new("shared", 4 * KIB).kind(MemoryKind::Unified))
        .expect("alloc");
    while ctx.alloc(AllocDesc::new("filler", 4 * KIB)).is_ok() {}
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 253) as u8).collect();
    if let Err(e) = ctx.upload(h, &data) {
        panic!("unified memory needs no staging, but the upload failed: {e}");
    }
    match ctx.download(h) {
        Ok(back) => assert!(back == data, "WRONG ANSWER: the bytes read back differ"),
        Err(e) => panic!("unified memory needs no staging, but the download failed: {e}"),
    }
}

fn advise_device() {
    let ctx = host();
    let h = alloc(&ctx, "on-device", 4 * KIB);
    expect_err!(
        ctx.memory().advise(h, MemoryAdvice::PreferHost),
        Error::InvalidParameter { .. },
        ["`on-device`", "Device"],
        ["Unified"]
    );
}

fn advise_unified() {
    let ctx = host();
    let h = unified(&ctx);
    for a in [
        MemoryAdvice::ReadMostly,
        MemoryAdvice::UnsetReadMostly,
        MemoryAdvice::PreferDevice,
        MemoryAdvice::PreferHost,
        MemoryAdvice::UnsetPreferredLocation,
    ] {
        if let Err(e) = ctx.memory().advise(h, a) {
            panic!("advice {a:?} on unified memory is documented as accepted, but: {e}");
        }
    }
}

fn gpu_upload_u64_max() {
    let Some(ctx) = gpu("gpu upload_at u64::MAX") else {
        return;
    };
    let h = alloc(&ctx, "sixteen", 16);
    expect_err!(
        ctx.transfers().upload_at(h, u64::MAX, &[1; 3]),
        Error::InvalidRange { .. },
        ["`sixteen`", "18446744073709551615"],
        [PAST]
    );
    still_usable(&ctx);
}

fn gpu_unified_past_end() {
    let Some(ctx) = gpu("gpu unified past end") else {
        return;
    };
    let Ok(h) = ctx.alloc(AllocDesc::new("shared", 16).kind(MemoryKind::Unified)) else {
        return crate::harness::skip("the adapter offers no unified memory");
    };
    expect_err!(
        ctx.transfers().download_into(h, 9, &mut [0; 8]),
        Error::InvalidRange { .. },
        ["`shared`", "9", "16 bytes"],
        [PAST]
    );
    still_usable(&ctx);
}

fn gpu_advise_device() {
    let Some(ctx) = gpu("gpu advise device") else {
        return;
    };
    let h = alloc(&ctx, "on-device", 4 * KIB);
    expect_err!(
        ctx.memory().advise(h, MemoryAdvice::ReadMostly),
        Error::InvalidParameter { .. },
        ["`on-device`", "Device"],
        ["Unified"]
    );
}
