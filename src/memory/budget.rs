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

    /// The size of a new shared block for a request of `size` bytes, or `None` when the request
    /// takes a dedicated block. Small requests share 2 MiB blocks, larger ones blocks of four
    /// times their size (a power of two), at most `block_size`, and never more than half the room
    /// the budget leaves, so one pool does not take the budget from the others and from staging.
    pub fn shared_block(
        size: u64,
        headroom: u64,
        unit: u64,
        block_size: u64,
        dedicated: u64,
    ) -> Option<u64> {
        if size > dedicated {
            return None;
        }
        let want = (4 * size).next_power_of_two().max(2 << 20).min(block_size);
        let block = want.min(headroom / 2 / unit * unit);
        (block >= 2 * size).then_some(block)
    }

    /// How many items of `item` bytes (a multiple of `unit`) new blocks could hold within
    /// `headroom`, following the pool's growth rule ([`Budget::shared_block`]).
    pub fn items_in_new_blocks(
        mut headroom: u64,
        item: u64,
        unit: u64,
        block_size: u64,
        dedicated: u64,
    ) -> u64 {
        let mut n = 0u64;
        while headroom >= item {
            match Self::shared_block(item, headroom, unit, block_size, dedicated) {
                Some(block) => {
                    n += block / item;
                    headroom -= block;
                }
                None => {
                    n += 1;
                    headroom -= item;
                }
            }
        }
        n
    }
}
