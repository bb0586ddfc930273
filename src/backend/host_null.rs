//! Addresses of a null device's blocks ([`HostConfig::keep_bytes`](super::host::HostConfig)
//! off, with a reservation): address space no memory is behind, so that device pointers (the
//! C ABI's among them) are handed out and looked up as on a device while nothing is stored.
//!
//! One range serves every null device of the process, as one address space serves every GPU
//! of a process, so no two devices hand out the same pointer. Each block takes its
//! reservation's worth of it (rounded to 2 MiB, as CUDA rounds its reservations), grows only
//! within that, as a host block does, and gives it back when freed.

use std::sync::Mutex;

use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

/// Where the addresses start: 64 TiB in, above what a process maps low, below the 48-bit top.
const BASE: u64 = 1 << 46;
/// Where they end.
const END: u64 = 1 << 47;
/// Spans are whole multiples of this.
const ALIGN: u64 = 2 << 20;

/// The range's free spans (start, length), and where the part never used starts.
struct Space {
    free: Vec<(u64, u64)>,
    next: u64,
}

static SPACE: Mutex<Space> = Mutex::new(Space {
    free: Vec::new(),
    next: BASE,
});

fn space() -> std::sync::MutexGuard<'static, Space> {
    SPACE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A block's place in the range.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct NullSpan {
    /// 0: none (a block of a device that keeps bytes, or without a reservation).
    pub address: u64,
    pub len: u64,
}

impl NullSpan {
    /// A span for a block of `size` bytes that reserves `bytes`: the first free one that
    /// holds it, else the range's unused end.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] (for `size`) when the range has no room left.
    pub fn take(bytes: u64, size: u64) -> Result<Self> {
        let len = bytes
            .max(1)
            .checked_next_multiple_of(ALIGN)
            .unwrap_or(u64::MAX);
        let mut s = space();
        if let Some(i) = s.free.iter().position(|&(_, l)| l >= len) {
            let (at, l) = s.free[i];
            if l == len {
                s.free.swap_remove(i);
            } else {
                s.free[i] = (at + len, l - len);
            }
            return Ok(Self { address: at, len });
        }
        match s.next.checked_add(len).filter(|&end| end <= END) {
            Some(end) => {
                let address = std::mem::replace(&mut s.next, end);
                Ok(Self { address, len })
            }
            None => Err(Error::OutOfMemory {
                requested: size,
                kind: MemoryKind::Device,
                detail: format!(
                    "the null device's {} bytes of addresses are taken by blocks alive now \
                     ({bytes} reserved for this one, HostConfig::reserve): free or trim \
                     blocks, or use fewer devices or smaller reservations at once",
                    END - BASE
                ),
            }),
        }
    }

    /// Gives the span back (a freed block's), merging it with free neighbours.
    pub fn give_back(self) {
        if self.address == 0 {
            return;
        }
        let mut s = space();
        let (mut at, mut len) = (self.address, self.len);
        s.free.retain(|&(a, l)| {
            if a + l == at {
                at = a;
                len += l;
                false
            } else if at + len == a {
                len += l;
                false
            } else {
                true
            }
        });
        if at + len == s.next {
            s.next = at;
        } else {
            s.free.push((at, len));
        }
    }

    /// Whether a block in this span may grow to `new_size` bytes: within its span, as a host
    /// block grows within its reservation.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] past the span.
    pub fn check_growth(self, new_size: u64, extra: u64) -> Result<()> {
        if self.address == 0 || new_size <= self.len {
            return Ok(());
        }
        Err(Error::OutOfMemory {
            requested: extra,
            kind: MemoryKind::Device,
            detail: format!(
                "a block cannot grow past the {} bytes it reserved (HostConfig::reserve)",
                self.len
            ),
        })
    }
}
