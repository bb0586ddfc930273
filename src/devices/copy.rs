//! Copies between allocations of a [`DeviceSet`], through a host bounce buffer of one staging
//! chunk: each chunk is read back from the source's device and uploaded to the destination's,
//! counted in both contexts' staging budgets, each transfer ordered after the work already
//! recorded on its device.
//!
//! The two transfers never nest: a chunk read straight from one context's readback staging into
//! another's upload staging would hold both contexts' staging locks at once, and two copies in
//! opposite directions (or a copy and a caller's own nested transfer) would then wait for each
//! other forever. One host copy more a chunk is the price.

use super::{DeviceHandle, DeviceSet};
use crate::backend::Backend;
use crate::error::{Error, Result};

impl<B: Backend> DeviceSet<B> {
    /// Copies all of `src` into the start of `dst` (any devices of the set, the same one
    /// included). Returns once the bytes are in `dst`'s device memory, or queued there in
    /// order.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `dst` is smaller than `src`; [`Error::StaleHandle`] for a
    /// released handle or one of another device than it says; [`Error::InvalidParameter`] for
    /// a device past the set; transfer errors of either device.
    pub fn copy(&self, src: DeviceHandle, dst: DeviceHandle) -> Result<()> {
        let (from, to) = (self.device(src.device)?, self.device(dst.device)?);
        let len = from.size_of(src.handle)?;
        let room = to.size_of(dst.handle)?;
        if room < len {
            return Err(Error::ShapeMismatch {
                expected: format!("a destination of at least {len} bytes (the source's size)"),
                actual: format!("{room} bytes"),
            });
        }
        let chunk = from.staging_chunk().min(to.staging_chunk()).min(len);
        let mut bounce = crate::memory::host_buffer(chunk, "a copy's bounce buffer")?;
        let mut at = 0;
        while at < len {
            let n = (len - at).min(chunk) as usize;
            from.download_into(src.handle, at, &mut bounce[..n])?;
            to.upload_at(dst.handle, at, &bounce[..n])?;
            at += n as u64;
        }
        Ok(())
    }
}
