//! The budget: a hard limit on the bytes a context holds from the device (blocks and staging).

/// A context's byte limit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// `u64::MAX` when unlimited.
    pub limit: u64,
}

impl Budget {
    pub fn new(limit: Option<u64>) -> Self {
        Self {
            limit: limit.unwrap_or(u64::MAX),
        }
    }

    pub fn as_option(&self) -> Option<u64> {
        (self.limit != u64::MAX).then_some(self.limit)
    }

    /// Bytes that may still be reserved.
    pub fn headroom(&self, reserved: u64) -> u64 {
        self.limit.saturating_sub(reserved)
    }

    /// How many items of `item` bytes (a multiple of `unit`) new blocks could hold within
    /// `headroom`, following the pool's growth rule: a shared block takes `block_size` bytes or half
    /// the remaining room, whichever is less, and holds at least two items; otherwise an item
    /// takes a dedicated block of its own size.
    pub fn items_in_new_blocks(
        mut headroom: u64,
        item: u64,
        unit: u64,
        block_size: u64,
        dedicated: u64,
    ) -> u64 {
        let mut n = 0u64;
        while headroom >= item {
            let block = (headroom / 2 / unit * unit).min(block_size);
            if item <= dedicated && block >= 2 * item {
                n += block / item;
                headroom -= block;
            } else {
                n += 1;
                headroom -= item;
            }
        }
        n
    }
}
