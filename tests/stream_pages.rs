//! Pages that follow the live set beside streams still running, on the host backend's model
//! of streams: free pages the running stream did not release go without waiting for it, and
//! those it released move to its own next request without a wait (its order keeps the new
//! work after the old), their old place left until it passed.

mod common;

use common::streams::{as_the_c_abi, A, B, C, IN_FLIGHT};
use vramkit::backend::host::HostBackend;
use vramkit::{AllocDesc, BufferHandle, Context};

const MIB: u64 = 1 << 20;

fn desc(n: u64) -> AllocDesc {
    AllocDesc::new("t", n).uninit()
}

/// Following the live set, free pages released before a running stream's release go back (or
/// move) at once, and that stream's released pages stay until it passed.
#[test]
fn pages_released_before_a_running_stream_go_without_waiting_for_it() -> anyhow::Result<()> {
    let s = as_the_c_abi();
    // [Z: B's, 4 MiB][K][W: A's, 4 MiB][K2][V: B's, 4 MiB][K3][X: A's, 8 MiB][K4]
    let (z, _) = s.interop().alloc_on(desc(4 * MIB), B)?;
    let (k, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (w, _) = s.interop().alloc_on(desc(4 * MIB), A)?;
    let (k2, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (v, _) = s.interop().alloc_on(desc(4 * MIB), B)?;
    let (k3, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (x, px) = s.interop().alloc_on(desc(8 * MIB), A)?;
    let (k4, _) = s.interop().alloc_on(desc(MIB), A)?;
    for h in [z, w, v] {
        s.release(h)?;
    }
    // B and A passed those releases (nothing held them); then A runs on, over X.
    let (t, _) = s.interop().alloc_on(desc(4096), C)?;
    s.release(t)?;
    s.backend().hold_stream(A);
    // SAFETY: the host backend's address of 8 MiB the allocation owns.
    unsafe { std::ptr::write_bytes(px.address as *mut u8, IN_FLIGHT, (8 * MIB) as usize) };
    s.release(x)?;
    // 9 MiB fit no hole: the segment grows past the slack over the peak, and pages go to make
    // room: Z's, W's and V's, released before A's release, without waiting for A; not X's,
    // the largest free range, which A may still use.
    let (y, _) = s.interop().alloc_on(desc(9 * MIB), A)?;
    let st = s.stats();
    assert!(
        st.pages.unmapped_bytes + st.pages.moved_bytes >= 4 * MIB,
        "no free pages went: {:?}",
        st.pages
    );
    assert!(s.backend().is_held(A), "the allocation waited for A");
    // SAFETY: released, still in flight on A: reserved host memory of the segment.
    let now = unsafe { std::slice::from_raw_parts(px.address as *const u8, (8 * MIB) as usize) };
    assert!(
        now.iter().all(|&b| b == IN_FLIGHT),
        "pages A released went while A ran"
    );
    s.backend().resume_stream(A);
    for h in [k, k2, k3, k4, y] {
        s.release(h)?;
    }
    s.observe().audit().check()?;
    Ok(())
}

/// [K0][W][K1][Y][K2], all on A; W freed and its pages gone (a 9 MiB request grew the
/// segment past the slack: they moved to its new end); then A runs on and Y (4 MiB, its bytes `IN_FLIGHT`) is released
/// behind it. Returns the handles still live, Y's address and the bytes moved so far.
fn y_released_behind_a(s: &Context<HostBackend>) -> anyhow::Result<(Vec<BufferHandle>, u64, u64)> {
    let (k0, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (w, _) = s.interop().alloc_on(desc(8 * MIB), A)?;
    let (k1, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (y, py) = s.interop().alloc_on(desc(4 * MIB), A)?;
    let (k2, _) = s.interop().alloc_on(desc(MIB), A)?;
    s.release(w)?;
    let (g, _) = s.interop().alloc_on(desc(9 * MIB), A)?;
    let before = s.stats().pages;
    // W's pages went: moved to the segment's new end, or given back.
    assert!(
        before.unmapped_bytes + before.moved_bytes >= 4 * MIB,
        "W's pages stayed: {before:?}"
    );
    s.backend().hold_stream(A);
    // SAFETY: the host backend's address of 4 MiB the allocation owns.
    unsafe { std::ptr::write_bytes(py.address as *mut u8, IN_FLIGHT, (4 * MIB) as usize) };
    s.release(y)?;
    Ok((vec![k0, k1, k2, g], py.address, before.moved_bytes))
}

/// Memory held within the slack over the most in use, to a page.
fn within_slack(s: &Context<HostBackend>) {
    let st = s.stats();
    let peak = st.peak_in_use as f64;
    assert!(
        st.reserved as f64 <= peak * 1.02 + (64 << 10) as f64,
        "memory held {} past the slack over the peak {peak}",
        st.reserved
    );
}

/// A request on the stream that released pages still in use takes them, moved to its place,
/// without waiting for that stream; the released bytes stay at their old place until it passed.
#[test]
fn pages_a_running_stream_released_move_to_its_next_request_without_a_wait() -> anyhow::Result<()> {
    let s = as_the_c_abi();
    let (mut live, py, before) = y_released_behind_a(&s)?;
    // 6 MiB fit only W's place, given back: mapping it there passes the slack unless Y's pages
    // move in, which A released and may still use at their old place.
    let (z, pz) = s.interop().alloc_on(desc(6 * MIB), A)?;
    let after = s.stats();
    assert!(
        after.pages.moved_bytes >= before + 2 * MIB,
        "Y's pages did not move: {:?}",
        after.pages
    );
    assert!(s.backend().is_held(A), "the request waited for A");
    assert!(pz.address + 6 * MIB <= py || py + 4 * MIB <= pz.address);
    within_slack(&s);
    // SAFETY: Y's old place: reserved host memory of the segment, its old mapping left to A.
    let old = unsafe { std::slice::from_raw_parts(py as *const u8, (4 * MIB) as usize) };
    assert!(
        old.iter().all(|&b| b == IN_FLIGHT),
        "Y's old place changed while A ran"
    );
    // Another stream's request waits for A first: A's release of Y is not passed.
    let (t, _) = s.interop().alloc_on(desc(4 * MIB), B)?;
    assert!(!s.backend().is_held(A), "B's request did not wait for A");
    s.backend().resume_stream(A);
    live.extend([z, t]);
    finish(&s, live)
}

/// A stream being captured into a graph: its pages do not move behind it (the backend
/// declines), and the request is served as without moves, within the slack, after a wait.
#[test]
fn a_captured_stream_s_pages_do_not_move_behind_it_and_the_request_is_served() -> anyhow::Result<()>
{
    let s = as_the_c_abi();
    s.backend().capture_stream(A, true);
    let (mut live, _, _) = y_released_behind_a(&s)?;
    let (z, _) = s.interop().alloc_on(desc(6 * MIB), A)?;
    assert!(
        !s.backend().is_held(A),
        "pages moved behind a stream being captured"
    );
    within_slack(&s);
    s.backend().capture_stream(A, false);
    live.push(z);
    finish(&s, live)
}

/// Releases `live`, runs a request on another stream, and audits the context.
fn finish(s: &Context<HostBackend>, live: Vec<BufferHandle>) -> anyhow::Result<()> {
    for h in live {
        s.release(h)?;
    }
    let (u, _) = s.interop().alloc_on(desc(MIB), C)?;
    s.release(u)?;
    s.observe().audit().check()?;
    Ok(())
}
