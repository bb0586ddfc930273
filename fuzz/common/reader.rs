//! What the operation-sequence fuzz targets share: numbers read from the fuzzer's bytes, and
//! which errors are refusals (the budget or the device out of room), not bugs.

use vramkit::Error;

/// Reads numbers from the fuzzer's bytes; zeros once they run out.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    pub fn u16(&mut self) -> u64 {
        u64::from(self.u8()) | u64::from(self.u8()) << 8
    }
    pub fn u32(&mut self) -> u64 {
        self.u16() | self.u16() << 16
    }
    pub fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether `e` refuses for want of room (the budget, the device, staging).
pub fn refusal(e: &Error) -> bool {
    matches!(
        e,
        Error::OverBudget { .. } | Error::OutOfMemory { .. } | Error::Staging { .. }
    )
}
