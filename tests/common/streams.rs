//! The host backend's model of foreign streams, as the stream tests use it: three streams, and
//! contexts over segments in reserved space as the C ABI's.

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::ForeignStream;
use vramkit::{Context, ContextDesc};

// SAFETY: the host backend's streams are numbers of its model.
pub const A: ForeignStream = unsafe { ForeignStream::from_raw(0xa) };
// SAFETY: as above.
pub const B: ForeignStream = unsafe { ForeignStream::from_raw(0xb) };
// SAFETY: as above.
pub const C: ForeignStream = unsafe { ForeignStream::from_raw(0xc) };

/// Segments as the C ABI's: pages that follow the live set, no compaction before growth.
pub fn as_the_c_abi() -> Context<HostBackend> {
    segments(ContextDesc {
        follow_live: true,
        compaction: vramkit::memory::CompactionDesc {
            before_growth: false,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Byte the model's streams leave in memory they release while held.
pub const IN_FLIGHT: u8 = 0x3c;

/// A context whose device blocks are segments in reserved space (stable addresses, pages that
/// go back), as the C ABI's.
pub fn segments(desc: ContextDesc) -> Context<HostBackend> {
    let host = HostBackend::new(HostConfig {
        reserve: Some(1 << 30),
        page_size: 64 << 10,
        ..Default::default()
    });
    Context::with_backend(host, desc)
}
