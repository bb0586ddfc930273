//! A segment that grows while free pages elsewhere would go back to make room: with
//! `ContextDesc::follow_live` (the C ABI's setting, where nothing moves) the new end comes
//! without memory and the free pages move there, on the host backend's model of pages, which
//! poisons what goes back and faults on any access to memory not mapped. Smaller pages fill a
//! larger page where the grid grows; data stays intact and memory within the slack.

mod common;

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::Storage;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, MemoryKind};

const MIB: u64 = 1 << 20;
/// The smallest page: 64 KiB below 64 MiB of the segment, 128 KiB up to 128 MiB.
const PAGE: u64 = 64 << 10;

fn following() -> Context<HostBackend> {
    let host = HostBackend::new(HostConfig {
        reserve: Some(1 << 30),
        page_size: PAGE,
        page_growth: true,
        ..Default::default()
    });
    let mut desc = ContextDesc {
        follow_live: true,
        ..Default::default()
    };
    desc.compaction.before_growth = false;
    Context::with_backend(host, desc)
}

fn pattern(seed: u8, len: u64) -> Vec<u8> {
    (0..len).map(|i| seed ^ (i as u8).wrapping_mul(7)).collect()
}

/// An allocation of `size` bytes on vramkit's own queue, filled with `pattern(seed)`.
fn filled(ctx: &Context<HostBackend>, size: u64, seed: u8) -> anyhow::Result<BufferHandle> {
    let h = ctx.alloc(AllocDesc::new("x", size).uninit().immovable())?;
    ctx.upload(h, &pattern(seed, size))?;
    Ok(h)
}

fn intact(ctx: &Context<HostBackend>, h: BufferHandle, size: u64, seed: u8) -> anyhow::Result<()> {
    anyhow::ensure!(
        ctx.download(h)? == pattern(seed, size),
        "an allocation's bytes changed"
    );
    Ok(())
}

/// Device memory held within the 1.9 % slack over the most in use, and the pages that hold
/// live bytes in part (two per allocation, of at most 128 KiB).
fn within_slack(ctx: &Context<HostBackend>, live: u64) {
    let s = ctx.stats().kind(MemoryKind::Device).clone();
    let bound = s.peak_in_use + s.peak_in_use / 50 + live * 2 * 2 * PAGE;
    assert!(
        s.peak_reserved <= bound,
        "peak reserved {} past {bound} (peak in use {})",
        s.peak_reserved,
        s.peak_in_use
    );
}

/// [X: 4 MiB][K: 1 MiB], X freed; a 6 MiB request fits no hole and grows the segment past
/// the slack: X's pages move to the new end instead of going back while new memory is
/// mapped there.
#[test]
fn a_growth_takes_the_free_pages_that_would_go_back() -> anyhow::Result<()> {
    let ctx = following();
    let x = filled(&ctx, 4 * MIB, 1)?;
    let k = filled(&ctx, MIB, 2)?;
    ctx.release(x)?;
    let y = filled(&ctx, 6 * MIB, 3)?;
    let pages = ctx.stats().pages;
    assert!(
        pages.moved_bytes >= 3 * MIB,
        "X's pages did not move to the new end: {pages:?}"
    );
    assert_eq!(
        pages.unmapped_bytes, 0,
        "pages went back while the segment grew: {pages:?}"
    );
    within_slack(&ctx, 2);
    intact(&ctx, y, 6 * MIB, 3)?;
    intact(&ctx, k, MIB, 2)?;
    ctx.backend().check_device()?;
    for h in [k, y] {
        ctx.release(h)?;
    }
    ctx.observe().audit().check()?;
    Ok(())
}

/// [X: 8 MiB][K: 56 MiB] fill the segment's 64 KiB pages; X freed, a 12 MiB request (Y, seed
/// 3) grows the segment where pages are 128 KiB, and X's small pages fill them, two to a page.
/// Returns the context, K (seed 2) and Y.
fn small_pages_in_a_growth() -> anyhow::Result<(Context<HostBackend>, BufferHandle, BufferHandle)> {
    let ctx = following();
    let x = filled(&ctx, 8 * MIB, 1)?;
    let k = filled(&ctx, 56 * MIB, 2)?;
    ctx.release(x)?;
    let y = filled(&ctx, 12 * MIB, 3)?;
    Ok((ctx, k, y))
}

/// [X: 8 MiB][K: 56 MiB] fill the segment's 64 KiB pages; X freed, a 12 MiB request grows the
/// segment where pages are 128 KiB: X's small pages fill them, two to a page. Those pages then
/// move again, whole; data intact, and a trim gives every page back.
#[test]
fn smaller_pages_fill_a_larger_page() -> anyhow::Result<()> {
    let (ctx, k, y) = small_pages_in_a_growth()?;
    let pages = ctx.stats().pages;
    // All but what the slack lets the growth map new.
    assert!(
        pages.moved_bytes >= 7 * MIB && pages.unmapped_bytes == 0,
        "X's 64 KiB pages did not move into the 128 KiB ones: {pages:?}"
    );
    within_slack(&ctx, 2);
    intact(&ctx, y, 12 * MIB, 3)?;
    intact(&ctx, k, 56 * MIB, 2)?;
    ctx.backend().check_device()?;
    // Y's pages, made of smaller ones, are donors in turn: with P after it (9 MiB, larger than
    // X's hole), Y's place is a 12 MiB hole, and a 14 MiB request grows the segment again and
    // takes them.
    let p = filled(&ctx, 9 * MIB, 5)?;
    ctx.release(y)?;
    let z = filled(&ctx, 14 * MIB, 4)?;
    let after = ctx.stats().pages;
    assert!(
        after.moved_bytes >= pages.moved_bytes + 10 * MIB,
        "Y's pages did not move: {after:?}"
    );
    within_slack(&ctx, 3);
    intact(&ctx, z, 14 * MIB, 4)?;
    intact(&ctx, k, 56 * MIB, 2)?;
    intact(&ctx, p, 9 * MIB, 5)?;
    ctx.backend().check_device()?;
    ctx.observe().audit().check()?;
    for h in [k, z, p] {
        ctx.release(h)?;
    }
    ctx.memory().trim()?;
    assert_eq!(ctx.stats().reserved, 0, "a trim left memory held");
    ctx.backend().check_device()?;
    ctx.observe().audit().check()?;
    Ok(())
}

/// A trim shrinks the segment to the middle of a 128 KiB page that two 64 KiB pages moved into
/// fill: the page stays mapped whole, so the next growth (with new memory, the end off the
/// grid) finds every byte below its start mapped (the host model faults on a hole, where
/// CUDA's clear of the growth would reach unmapped memory).
#[test]
fn a_shrink_into_a_page_that_smaller_pages_fill_keeps_it_whole() -> anyhow::Result<()> {
    let (ctx, k, y) = small_pages_in_a_growth()?;
    let x2 = filled(&ctx, 8 * MIB, 4)?;
    ctx.release(y)?;
    // Live bytes end half-way through a 128 KiB page of two moved 64 KiB ones.
    let z = filled(&ctx, MIB + PAGE, 5)?;
    ctx.memory().trim()?;
    let w = filled(&ctx, 4 * MIB, 6)?;
    ctx.backend().check_device()?;
    for (h, size, seed) in [
        (k, 56 * MIB, 2),
        (x2, 8 * MIB, 4),
        (z, MIB + PAGE, 5),
        (w, 4 * MIB, 6),
    ] {
        intact(&ctx, h, size, seed)?;
    }
    ctx.observe().audit().check()?;
    for h in [k, x2, z, w] {
        ctx.release(h)?;
    }
    Ok(())
}
