//! Pages given back inside segments (`Storage::unmap_pages`) on the host backend's model of
//! pages, which poisons what goes back and faults on any access to it: data survives, zeroed
//! allocations read zeros on pages mapped again, audits stay clean, and with
//! `ContextDesc::follow_live` the memory held stays within the slack over the peak in use
//! while no allocation moves.

mod common;

use rand::{Rng, SeedableRng};
use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc};

const PAGE: u64 = 64 << 10;
/// How often a churn audits the whole layout (pages given back lie in free chunks, counters).
const AUDIT_EVERY: usize = 7;

fn ctx(desc: ContextDesc, capacity: Option<u64>) -> Context<HostBackend> {
    let host = HostBackend::new(HostConfig {
        page_size: PAGE,
        capacity,
        ..Default::default()
    });
    Context::with_backend(host, desc)
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed as usize * 31 + i * 7) as u8 | 1)
        .collect()
}

/// Seeded random allocations of mixed sizes (up to 8 pages of `page` bytes), uploaded and
/// checked on release; some zeroed, checked for zeros first.
fn churn<B: Backend>(
    ctx: &Context<B>,
    page: u64,
    seed: u64,
    steps: usize,
    movable: bool,
) -> anyhow::Result<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut live: Vec<(BufferHandle, u64, u64)> = Vec::new();
    let mut id = 0u64;
    for step in 0..steps {
        if live.len() < 60 && rng.random_range(0..5) < 3 {
            let size = if rng.random_range(0..4) == 0 {
                rng.random_range(page..8 * page)
            } else {
                rng.random_range(1..page)
            };
            let zeroed = rng.random_range(0..3) == 0;
            let mut desc = AllocDesc::new("churn", size);
            if !zeroed {
                desc = desc.uninit();
            }
            if !movable {
                desc = desc.immovable();
            }
            let h = match ctx.alloc(desc) {
                Ok(h) => h,
                Err(vramkit::Error::OverBudget { .. } | vramkit::Error::OutOfMemory { .. }) => {
                    continue
                }
                Err(e) => return Err(e.into()),
            };
            if zeroed {
                let got = ctx.download(h)?;
                anyhow::ensure!(
                    got.iter().all(|&b| b == 0),
                    "seed {seed} step {step}: a zeroed allocation of {size} bytes holds non-zeros"
                );
            }
            id += 1;
            ctx.upload(h, &pattern(id, size as usize))?;
            live.push((h, id, size));
        } else if !live.is_empty() {
            let (h, id, size) = live.swap_remove(rng.random_range(0..live.len()));
            anyhow::ensure!(
                ctx.download(h)? == pattern(id, size as usize),
                "seed {seed} step {step}: an allocation's bytes changed"
            );
            ctx.release(h)?;
        }
        if step % AUDIT_EVERY == 0 {
            ctx.observe().audit().check()?;
        }
    }
    for (h, id, size) in live {
        anyhow::ensure!(ctx.download(h)? == pattern(id, size as usize));
        ctx.release(h)?;
    }
    ctx.observe().audit().check()?;
    Ok(id)
}

#[test]
fn following_the_live_set_keeps_memory_within_the_slack_and_data_intact() -> anyhow::Result<()> {
    for seed in 0..common::rounds(6) {
        let ctx = ctx(following(), None);
        churn(&ctx, PAGE, seed, 3000, false)?;
        let pages = ctx.stats().pages;
        // Free pages past the slack move where requests need memory (the host model moves
        // pages): with data intact, as `churn` checks.
        assert!(pages.moves > 0, "seed {seed}: no page moved: {pages:?}");
        within_slack(&ctx, seed, PAGE);
    }
    Ok(())
}

/// Physical memory may pass the peak in use by the slack (0.5 %) and by the pages (of at most
/// `page` bytes) that hold live bytes only in part (two per allocation at most, 60 live).
fn within_slack<B: Backend>(ctx: &Context<B>, seed: u64, page: u64) {
    let s = ctx.stats().kind(vramkit::MemoryKind::Device).clone();
    let bound = s.peak_in_use + s.peak_in_use / 200 + 120 * page;
    assert!(
        s.peak_reserved <= bound,
        "seed {seed}: peak reserved {} past {bound} (peak in use {})",
        s.peak_reserved,
        s.peak_in_use
    );
}

/// Pages that grow with the offset (1 KiB ones below 1 MiB of the segment, 2 KiB to 2 MiB,
/// 4 KiB to 4 MiB, ...): the host model faults on any page given back, mapped or moved in
/// part or to a place of another size; data stays intact and memory within the slack and the
/// pages that hold live bytes in part.
#[test]
fn pages_that_grow_with_the_offset_follow_the_live_set() -> anyhow::Result<()> {
    for seed in 0..common::rounds(6) {
        let host = HostBackend::new(HostConfig {
            page_size: 1 << 10,
            page_growth: true,
            ..Default::default()
        });
        let ctx = Context::with_backend(host, following());
        churn(&ctx, 64 << 10, seed, 3000, false)?;
        let pages = ctx.stats().pages;
        assert!(
            pages.moves > 0 && pages.unmaps > 0,
            "seed {seed}: {pages:?}"
        );
        let s = ctx.stats().kind(vramkit::MemoryKind::Device).clone();
        assert!(
            s.peak_reserved > 4 << 20,
            "seed {seed}: the segment stayed below 4 MiB ({} B): no page grew",
            s.peak_reserved
        );
        let largest = vramkit::backend::PageGrid::growing(1 << 10).size_at(s.peak_reserved);
        within_slack(&ctx, seed, largest);
    }
    Ok(())
}

#[test]
fn following_the_live_set_keeps_free_pages_up_to_three_quarters_of_the_slack() -> anyhow::Result<()>
{
    // A slack of 8 % over a peak of 200 pages: 16 pages, of which three quarters (12, less the
    // rounding of the permille: 11 whole pages) are kept mapped while free; past them, free
    // pages whose work has finished go back (on the host, all work has).
    let mut desc = following();
    desc.compaction.slack_permille = 80;
    let ctx = ctx(desc, None);
    let ones: Vec<BufferHandle> = (0..200)
        .map(|i| ctx.alloc(AllocDesc::new(format!("one {i}"), PAGE).uninit()))
        .collect::<Result<_, _>>()?;
    let reserved = || ctx.stats().kind(vramkit::MemoryKind::Device).reserved;
    let peak = 200 * PAGE;
    let slack = peak / 1000 * 80;
    let kept = (slack / 4 * 3) / PAGE * PAGE;
    assert!(
        reserved() <= peak + kept,
        "growing, the segment took at most the margin ahead"
    );
    // Holes of one page each, then requests of two pages that no hole holds: each maps pages,
    // and free pages go back (or move) so that the memory held stays at the margin.
    for (i, h) in ones.iter().enumerate() {
        if i % 2 == 1 {
            ctx.release(*h)?;
        }
    }
    let mut twos = Vec::new();
    for i in 0..40 {
        twos.push(ctx.alloc(AllocDesc::new(format!("two {i}"), 2 * PAGE).uninit())?);
        let held = reserved();
        assert!(
            held <= peak + kept,
            "request {i}: {held} B held, past the peak and three quarters of the slack"
        );
    }
    assert_eq!(
        reserved(),
        peak + kept,
        "the free pages within the margin stay mapped"
    );
    assert!(ctx.stats().pages.moved_bytes + ctx.stats().pages.unmapped_bytes > 0);
    for h in ones.iter().step_by(2).chain(&twos) {
        ctx.release(*h)?;
    }
    ctx.observe().audit().check()?;
    Ok(())
}

#[test]
fn without_following_the_pool_keeps_its_holes() -> anyhow::Result<()> {
    // The same churn without follow_live: nothing goes back, so it holds more. This is what
    // the setting is for; if it ever stopped mattering, the test above would prove nothing.
    let mut desc = ContextDesc::default();
    desc.compaction.before_growth = false;
    let (mut with, mut without) = (0, 0);
    for seed in 0..common::rounds(6) {
        let plain = ctx(desc.clone(), None);
        churn(&plain, PAGE, seed, 3000, false)?;
        without += plain
            .stats()
            .kind(vramkit::MemoryKind::Device)
            .peak_reserved;
        let mut d = desc.clone();
        d.follow_live = true;
        let follow = ctx(d, None);
        churn(&follow, PAGE, seed, 3000, false)?;
        with += follow
            .stats()
            .kind(vramkit::MemoryKind::Device)
            .peak_reserved;
    }
    assert!(with < without, "follow_live held {with}, plain {without}");
    Ok(())
}

#[test]
fn pressure_gives_pages_back_and_compaction_maps_them_again() -> anyhow::Result<()> {
    // A tight budget: refusals reclaim free pages, and compaction moves movable allocations
    // into ranges whose pages went back (mapped again first, or the model faults).
    for seed in 0..common::rounds(6) {
        let ctx = ctx(
            ContextDesc {
                budget: Some(96 * PAGE),
                staging_chunk: PAGE,
                staging_slots: 1,
                ..Default::default()
            },
            None,
        );
        churn(&ctx, PAGE, seed, 3000, true)?;
    }
    Ok(())
}

#[test]
fn a_release_threshold_gives_free_pages_back_and_trim_gives_all() -> anyhow::Result<()> {
    let ctx = ctx(
        ContextDesc {
            release_threshold: 4 * PAGE,
            ..Default::default()
        },
        None,
    );
    let hs: Vec<_> = (0..40)
        .map(|_| ctx.alloc(AllocDesc::new("x", 3 * PAGE).immovable()))
        .collect::<Result<_, _>>()?;
    for h in hs.iter().step_by(2) {
        ctx.release(*h)?;
    }
    // Growing now gives back free pages past the threshold first.
    let big = ctx.alloc(AllocDesc::new("big", 20 * PAGE).immovable())?;
    let s = ctx.stats();
    assert!(
        s.reserved <= s.in_use + 4 * PAGE + 2 * PAGE,
        "reserved {} in use {}",
        s.reserved,
        s.in_use
    );
    ctx.release(big)?;
    for h in hs.iter().skip(1).step_by(2) {
        ctx.release(*h)?;
    }
    ctx.memory().trim()?;
    assert_eq!(ctx.stats().reserved, 0);
    ctx.observe().audit().check()?;
    Ok(())
}

#[test]
fn a_request_takes_mapped_free_memory_before_pages_are_mapped_again() -> anyhow::Result<()> {
    let ctx = ctx(
        ContextDesc {
            follow_live: true,
            ..Default::default()
        },
        None,
    );
    let imm = |n: u64| ctx.alloc(AllocDesc::new("x", n * PAGE).uninit().immovable());
    let (a, s1, b, s2) = (imm(4)?, imm(1)?, imm(5)?, imm(1)?);
    // `a`'s four pages go back; `b`'s five stay mapped, free.
    ctx.release(a)?;
    ctx.memory().trim()?;
    ctx.release(b)?;
    let before = ctx.stats().pages;
    assert!(before.unmaps > 0, "trim gave nothing back: {before:?}");
    // Four pages fit `a`'s old place best, but that would map them again.
    let c = imm(4)?;
    ctx.upload(c, &pattern(9, (4 * PAGE) as usize))?;
    assert_eq!(ctx.download(c)?, pattern(9, (4 * PAGE) as usize));
    let after = ctx.stats().pages;
    assert_eq!(
        after.maps, before.maps,
        "pages were mapped again while five free pages were mapped: {after:?}"
    );
    for h in [c, s1, s2] {
        ctx.release(h)?;
    }
    ctx.observe().audit().check()?;
    Ok(())
}

/// Settings under which free pages follow the live set: `follow_live`, no compaction.
fn following() -> ContextDesc {
    let mut desc = ContextDesc {
        follow_live: true,
        ..Default::default()
    };
    desc.compaction.before_growth = false;
    desc
}

/// A CUDA context with [`following`] settings and its page grid; `None` (skipped, saying why)
/// without CUDA or without virtual memory management.
#[cfg(feature = "cuda")]
fn cuda_following(
    name: &str,
) -> Option<(
    Context<vramkit::backend::cuda::CudaBackend>,
    vramkit::backend::PageGrid,
)> {
    use vramkit::backend::Storage;
    let ctx = common::try_cuda(name, following())?;
    let Some(grid) = ctx.backend().page_grid(vramkit::MemoryKind::Device) else {
        eprintln!("SKIPPED {name}: this device has no virtual memory management");
        return None;
    };
    Some((ctx, grid))
}

/// The same on CUDA (skipped without it): segments' 2 MiB pages unmapped and mapped again
/// with the driver's virtual memory calls, data intact, memory within the slack.
#[cfg(feature = "cuda")]
#[test]
fn cuda_pages_follow_the_live_set_with_data_intact() -> anyhow::Result<()> {
    let Some((ctx, grid)) = cuda_following("cuda_pages") else {
        return Ok(());
    };
    assert!(grid.grows(), "pages grow with the offset by default");
    cuda_churn(&ctx, grid.base(), 1)
}

/// Past 2 GiB of a segment (an immovable allocation below), pages are twice the granularity:
/// the churn above it gives back, maps again and moves 4 MiB pages, data intact.
#[cfg(feature = "cuda")]
#[test]
fn cuda_pages_past_two_gib_are_larger_and_follow_the_live_set() -> anyhow::Result<()> {
    use vramkit::backend::Storage;
    let Some((ctx, grid)) = cuda_following("cuda_pages_past_two_gib") else {
        return Ok(());
    };
    let total = ctx.backend().memory_info().map_or(0, |m| m.total);
    if total < 8 << 30 {
        eprintln!("SKIPPED cuda_pages_past_two_gib: the device has less than 8 GiB");
        return Ok(());
    }
    let below = ctx.alloc(AllocDesc::new("below", 2 << 30).uninit().immovable())?;
    let page = grid.size_at(2 << 30);
    assert_eq!(
        page,
        2 * grid.base(),
        "pages past 2 GiB are twice the first"
    );
    cuda_churn(&ctx, page, 3)?;
    ctx.release(below)?;
    Ok(())
}

/// [`churn`] on CUDA: pages were mapped again and moved, data intact, memory within the
/// slack.
#[cfg(feature = "cuda")]
fn cuda_churn(
    ctx: &Context<vramkit::backend::cuda::CudaBackend>,
    page: u64,
    seed: u64,
) -> anyhow::Result<()> {
    churn(ctx, page, seed, 1500, false)?;
    let s = ctx.stats();
    // Free pages move where requests and growths need memory rather than go back.
    assert!(
        s.pages.maps > 0 && s.pages.moves > 0,
        "no page was mapped again or moved: {:?}",
        s.pages
    );
    let k = s.kind(vramkit::MemoryKind::Device);
    let bound = k.peak_in_use + k.peak_in_use / 200 + 120 * page;
    assert!(
        k.peak_reserved <= bound,
        "peak reserved {} past {bound}",
        k.peak_reserved
    );
    Ok(())
}

/// Larger pages (`CudaConfig::page_size`, rounded up to the granularity): each one physical
/// allocation, given back, mapped again and moved whole, data intact.
#[cfg(feature = "cuda")]
#[test]
fn cuda_pages_of_a_chosen_size_follow_the_live_set() -> anyhow::Result<()> {
    use vramkit::backend::cuda::{CudaBackend, CudaConfig};
    use vramkit::backend::Storage;
    let Some((probe, grid)) = cuda_following("cuda_pages_of_a_chosen_size") else {
        return Ok(());
    };
    let granularity = grid.base();
    drop(probe);
    let config = CudaConfig {
        page_size: 2 * granularity + 1,
        ..Default::default()
    };
    let ctx = Context::with_backend(
        CudaBackend::with_config(0, config)?,
        common::with_env(following()),
    );
    let page = ctx
        .backend()
        .page_grid(vramkit::MemoryKind::Device)
        .map(|g| g.base());
    assert_eq!(page, Some(3 * granularity), "rounded up to the granularity");
    cuda_churn(&ctx, 3 * granularity, 2)?;
    // Past the largest page: a typed error.
    let huge = CudaConfig {
        page_size: CudaConfig::MAX_PAGE_SIZE + 1,
        ..Default::default()
    };
    assert!(matches!(
        CudaBackend::with_config(0, huge),
        Err(vramkit::Error::InvalidParameter {
            name: "page_size",
            ..
        })
    ));
    Ok(())
}

/// Pages unmapped by the backend's thread and inside the call that gives them back
/// (`CudaConfig::background_unmap` on and off, whatever the default): the same churn, data
/// intact.
#[cfg(feature = "cuda")]
#[test]
fn cuda_pages_unmapped_in_the_background_or_inline_follow_the_live_set() -> anyhow::Result<()> {
    use vramkit::backend::cuda::{CudaBackend, CudaConfig};
    let Some((probe, grid)) = cuda_following("cuda_pages_unmapped_in_the_background") else {
        return Ok(());
    };
    drop(probe);
    for (seed, background_unmap) in [(4, true), (5, false)] {
        let config = CudaConfig {
            background_unmap,
            ..Default::default()
        };
        let ctx = Context::with_backend(
            CudaBackend::with_config(0, config)?,
            common::with_env(following()),
        );
        cuda_churn(&ctx, grid.base(), seed)?;
    }
    Ok(())
}
