//! Copies between allocations of a [`DeviceSet`]: between two devices, streamed chunk by chunk
//! from the source's readback staging straight into the destination's upload staging (one
//! host copy a chunk, counted in both contexts' staging budgets, each device's transfer
//! ordered after the work already recorded on it); within one context, through a host bounce
//! buffer of one staging chunk.

use super::{DeviceHandle, DeviceSet};
use crate::backend::Backend;
use crate::error::{Error, Result};

impl<B: Backend> DeviceSet<B> {
    /// Copies all of `src` into the start of `dst` (any devices of the set, the same one
    /// included). Waits until the bytes are in `dst`'s device memory, or queued there in order.
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
        if src.device == dst.device {
            let mut bounce = crate::memory::host_buffer(
                from.staging_chunk().min(len),
                "a copy's bounce buffer",
            )?;
            let mut at = 0;
            while at < len {
                let n = (len - at).min(bounce.len() as u64) as usize;
                from.download_into(src.handle, at, &mut bounce[..n])?;
                to.upload_at(dst.handle, at, &bounce[..n])?;
                at += n as u64;
            }
            return Ok(());
        }
        let mut failed = Ok(());
        from.download_with(src.handle, 0..len, |at, chunk| {
            if failed.is_ok() {
                failed = to.upload_at(dst.handle, at, chunk);
            }
        })?;
        failed
    }
}
