//! Device pointers are leases (`Interop::device_ptr`): while a lease (or a clone) lives, the
//! allocation's range is not handed out again, even once it is released; the release
//! completes when the last lease is dropped; a context dropped under live leases leaves their
//! memory allocated. On the host backend, whose addresses are real memory.

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::{AllocDesc, Context, ContextDesc};

fn ctx() -> Context<HostBackend> {
    let host = HostBackend::new(HostConfig {
        reserve: Some(1 << 30),
        page_size: 64 << 10,
        ..Default::default()
    });
    Context::with_backend(host, ContextDesc::default())
}

#[test]
fn a_released_allocation_stays_out_of_reuse_while_its_lease_lives() -> anyhow::Result<()> {
    let c = ctx();
    let h = c.alloc(AllocDesc::new("lent", 1 << 20).uninit())?;
    let lease = c.interop().device_ptr(h)?;
    let copy = lease.clone();
    let (start, end) = (lease.address, lease.address + lease.size);
    drop(lease);
    c.release(h)?;
    assert_eq!(c.stats().pending_release, 1 << 20);
    // Many requests of every size: none lands on the lent range.
    let mut others = Vec::new();
    for i in 0..64u64 {
        let o = c.alloc(AllocDesc::new("other", 4096 + i * 65536).uninit())?;
        let p = c.interop().device_ptr(o)?;
        assert!(
            p.address + p.size <= start || end <= p.address,
            "request {i} got memory a live lease points at"
        );
        others.push(o);
    }
    c.observe().audit().check()?;
    drop(copy);
    // The next operation collects the ended lease; the range is free again.
    let probe = c.alloc(AllocDesc::new("probe", 4096).uninit())?;
    assert_eq!(c.stats().pending_release, 0);
    c.release(probe)?;
    for o in others {
        c.release(o)?;
    }
    c.observe().audit().check()?;
    assert_eq!(c.stats().live, 0);
    Ok(())
}

#[test]
fn a_lease_outlives_a_release_and_the_bytes_stay() -> anyhow::Result<()> {
    let c = ctx();
    let h = c.alloc(AllocDesc::new("lent", 4096).uninit())?;
    let lease = c.interop().device_ptr(h)?;
    // SAFETY: the host backend's address of 4096 bytes the lease keeps.
    unsafe { std::ptr::write_bytes(lease.address as *mut u8, 0x5a, 4096) };
    c.release(h)?;
    for _ in 0..16 {
        let o = c.alloc(AllocDesc::new("zeroed", 4096))?;
        c.release(o)?;
    }
    // SAFETY: as above: the lease still lives.
    let bytes = unsafe { std::slice::from_raw_parts(lease.address as *const u8, 4096) };
    assert!(
        bytes.iter().all(|&b| b == 0x5a),
        "the lent range was reused"
    );
    Ok(())
}

#[test]
fn a_context_dropped_under_a_live_lease_leaves_its_memory() -> anyhow::Result<()> {
    let c = ctx();
    let h = c.alloc(AllocDesc::new("lent", 4096).uninit())?;
    let lease = c.interop().device_ptr(h)?;
    // SAFETY: the host backend's address of 4096 bytes the lease keeps.
    unsafe { std::ptr::write_bytes(lease.address as *mut u8, 0x7e, 4096) };
    drop(c);
    // SAFETY: the context left the block allocated because the lease lives.
    let bytes = unsafe { std::slice::from_raw_parts(lease.address as *const u8, 4096) };
    assert!(bytes.iter().all(|&b| b == 0x7e));
    drop(lease);
    Ok(())
}

/// A lease taken and dropped while the allocation lives, then another taken before its
/// release: the first one's end must not hand the range out while the second lives.
#[test]
fn an_earlier_lease_that_ended_does_not_free_a_range_leased_again() -> anyhow::Result<()> {
    let c = ctx();
    let h = c.alloc(AllocDesc::new("lent twice", 1 << 20).uninit())?;
    drop(c.interop().device_ptr(h)?);
    let lease = c.interop().device_ptr(h)?;
    let (start, end) = (lease.address, lease.address + lease.size);
    c.release(h)?;
    for i in 0..16u64 {
        let o = c.alloc(AllocDesc::new("other", 4096 + i * 65536).uninit())?;
        let p = c.interop().device_ptr(o)?;
        assert!(
            p.address + p.size <= start || end <= p.address,
            "request {i} got memory a live lease points at"
        );
    }
    drop(lease);
    c.observe().audit().check()?;
    Ok(())
}
