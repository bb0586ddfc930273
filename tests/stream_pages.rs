//! Pages that follow the live set beside streams still running, on the host backend's model
//! of streams: free pages the running stream did not release go without waiting for it, and
//! those it released move to its own next request without a wait (its order keeps the new
//! work after the old), their old place left until it passed.

mod common;

use common::streams::{as_the_c_abi, A, B, C, IN_FLIGHT};
use vramkit::AllocDesc;

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

/// A request on the stream that released pages still in use takes them, moved to its place,
/// without waiting for that stream; the released bytes stay at their old place until it passed.
#[test]
fn pages_a_running_stream_released_move_to_its_next_request_without_a_wait() -> anyhow::Result<()> {
    let s = as_the_c_abi();
    // [K0][W: 8 MiB][K1][Y: 4 MiB][K2], all on A.
    let (k0, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (w, _) = s.interop().alloc_on(desc(8 * MIB), A)?;
    let (k1, _) = s.interop().alloc_on(desc(MIB), A)?;
    let (y, py) = s.interop().alloc_on(desc(4 * MIB), A)?;
    let (k2, _) = s.interop().alloc_on(desc(MIB), A)?;
    // W goes (A passed it); a 9 MiB request fits no hole, the segment grows and W's pages go
    // back to keep memory held within the slack over the peak.
    s.release(w)?;
    let (g, _) = s.interop().alloc_on(desc(9 * MIB), A)?;
    let before = s.stats().pages;
    assert!(
        before.unmapped_bytes >= 4 * MIB,
        "W's pages stayed: {before:?}"
    );
    // A runs on; Y's release is in flight on it.
    s.backend().hold_stream(A);
    // SAFETY: the host backend's address of 4 MiB the allocation owns.
    unsafe { std::ptr::write_bytes(py.address as *mut u8, IN_FLIGHT, (4 * MIB) as usize) };
    s.release(y)?;
    // 6 MiB fit only W's place, given back: mapping it there passes the slack unless Y's pages
    // move in, which A released and may still use at their old place.
    let (z, pz) = s.interop().alloc_on(desc(6 * MIB), A)?;
    let after = s.stats();
    assert!(
        after.pages.moved_bytes >= before.moved_bytes + 2 * MIB,
        "Y's pages did not move: {:?}",
        after.pages
    );
    assert!(s.backend().is_held(A), "the request waited for A");
    assert!(pz.address + 6 * MIB <= py.address || py.address + 4 * MIB <= pz.address);
    let peak = after.peak_in_use as f64;
    assert!(
        after.reserved as f64 <= peak * 1.02 + (64 << 10) as f64,
        "memory held {} past the slack over the peak {peak}",
        after.reserved
    );
    // SAFETY: Y's old place: reserved host memory of the segment, its old mapping left to A.
    let old = unsafe { std::slice::from_raw_parts(py.address as *const u8, (4 * MIB) as usize) };
    assert!(
        old.iter().all(|&b| b == IN_FLIGHT),
        "Y's old place changed while A ran"
    );
    // Another stream's request waits for A first: A's release of Y is not passed.
    let (t, _) = s.interop().alloc_on(desc(4 * MIB), B)?;
    assert!(!s.backend().is_held(A), "B's request did not wait for A");
    s.backend().resume_stream(A);
    for h in [k0, k1, k2, g, z, t] {
        s.release(h)?;
    }
    let (u, _) = s.interop().alloc_on(desc(MIB), C)?;
    s.release(u)?;
    s.observe().audit().check()?;
    Ok(())
}
