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
        // In closed form where the rule is steady, so an unlimited budget (headroom near
        // u64::MAX) costs a few steps, not one per block.
        let mut n = 0u64;
        while headroom >= item {
            match Self::shared_block(item, headroom, unit, block_size, dedicated) {
                Some(block) => {
                    // While two blocks' room remains the block size does not change: take all
                    // but those at once.
                    let k = (headroom / block).saturating_sub(2).max(1);
                    n = n.saturating_add(k * (block / item));
                    headroom -= k * block;
                }
                None => {
                    // Dedicated blocks of `item` bytes, and once shared blocks stop fitting they
                    // never fit again as the headroom shrinks.
                    n = n.saturating_add(headroom / item);
                    headroom %= item;
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::Budget;

    /// The growth rule applied one block at a time.
    fn one_by_one(mut headroom: u64, item: u64, unit: u64, block_size: u64, dedicated: u64) -> u64 {
        let mut n = 0;
        while headroom >= item {
            match Budget::shared_block(item, headroom, unit, block_size, dedicated) {
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

    #[test]
    fn closed_form_counts_what_block_by_block_growth_counts() {
        let (unit, block_size) = (256, 64 << 20);
        let items = [
            256u64,
            4096,
            100 << 10,
            1 << 20,
            5 << 20,
            16 << 20,
            40 << 20,
        ];
        let rooms = [
            0u64,
            255,
            1 << 20,
            3 << 20,
            100 << 20,
            1 << 30,
            5_000_000_123,
        ];
        for item in items {
            for headroom in rooms {
                assert_eq!(
                    Budget::items_in_new_blocks(headroom, item, unit, block_size, block_size / 2),
                    one_by_one(headroom, item, unit, block_size, block_size / 2),
                    "item {item}, headroom {headroom}"
                );
            }
        }
        // An unlimited budget is a few steps, not one per block.
        let n = Budget::items_in_new_blocks(u64::MAX, 256, unit, block_size, block_size / 2);
        assert!(n > 1 << 50, "{n}");
    }
}
