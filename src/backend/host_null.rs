//! Addresses of a null device's blocks ([`HostConfig::keep_bytes`](super::host::HostConfig)
//! off, with a reservation): address space no memory is behind, so that device pointers (the
//! C ABI's among them) are handed out and looked up as on a device while nothing is stored.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

/// Where the addresses start, high in a 48-bit user address space, where a process rarely
/// maps anything.
const BASE: u64 = 1 << 46;
/// Where they end.
const END: u64 = 1 << 47;
/// The address space each block spans: it grows within it (1,024 blocks fit).
const SPAN: u64 = 64 << 30;

/// The next block's address.
#[derive(Debug)]
pub(super) struct NullAddresses(AtomicU64);

impl Default for NullAddresses {
    fn default() -> Self {
        Self(AtomicU64::new(BASE))
    }
}

impl NullAddresses {
    /// An address for a block of `bytes`; 0 (none) past the range's end, or for a block
    /// larger than a span.
    pub fn take(&self, bytes: u64) -> u64 {
        if bytes > SPAN {
            return 0;
        }
        let at = self.0.fetch_add(SPAN, Ordering::Relaxed);
        if at < END {
            at
        } else {
            0
        }
    }
}

/// Whether a block at `address` (0: none) may grow to `new_size` bytes: not past its span,
/// or the next block's addresses would overlap it.
pub(super) fn check_growth(address: u64, new_size: u64, extra: u64) -> Result<()> {
    if address == 0 || new_size <= SPAN {
        return Ok(());
    }
    Err(Error::OutOfMemory {
        requested: extra,
        kind: MemoryKind::Device,
        detail: format!("a null device's block spans {SPAN} bytes of addresses"),
    })
}
