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
}
