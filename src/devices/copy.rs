//! Copies between allocations of a [`DeviceSet`]: device to device where the backend has a
//! path (`direct.rs`: one device, CUDA peers), else through a host bounce buffer of one staging
//! chunk: each chunk is read back from the source's device and uploaded to the destination's,
//! counted in both contexts' staging budgets, each transfer ordered after the work already
//! recorded on its device.
//!
//! The two transfers never nest: a chunk read straight from one context's readback staging into
//! another's upload staging would hold both contexts' staging locks at once, and two copies in
//! opposite directions (or a copy and a caller's own nested transfer) would then wait for each
//! other forever. One host copy more a chunk is the price.

use super::{DeviceHandle, DeviceSet};

/// Which way a [`DeviceSet::copy`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPath {
    /// Device to device: within one device, between CUDA devices with peer access
    /// (`cuMemcpyPeerAsync`), or between contexts sharing one wgpu device. Needs both
    /// allocations of [`MemoryKind::Device`](crate::MemoryKind::Device), the ranges' starts at
    /// multiples of the offset alignment (256 bytes on most GPUs) in their blocks (an
    /// allocation's start always is) and a length of whole 4-byte words. An empty copy
    /// (nothing moves) reports it too.
    Device,
    /// Through a host bounce buffer, chunk by chunk through both contexts' staging.
    Host,
}
use crate::backend::Backend;
use crate::types::error::{Error, Result};

impl<B: Backend> DeviceSet<B> {
    /// Copies all of `src` into the start of `dst` (any devices of the set, the same one
    /// included). Returns once the bytes are in `dst`'s device memory, or queued there in
    /// order, and which way they went.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `dst` is smaller than `src`; as
    /// [`copy_range`](Self::copy_range).
    pub fn copy(&self, src: DeviceHandle, dst: DeviceHandle) -> Result<CopyPath> {
        let len = self.device(src.device)?.observe().size_of(src.handle)?;
        let room = self.device(dst.device)?.observe().size_of(dst.handle)?;
        if room < len {
            return Err(Error::ShapeMismatch {
                expected: format!("a destination of at least {len} bytes (the source's size)"),
                actual: format!("{room} bytes"),
            });
        }
        self.copy_range(src, 0, dst, 0, len)
    }

    /// Copies `len` bytes at byte `src_offset` of `src` to byte `dst_offset` of `dst` (any
    /// devices of the set, the same one included): device to device where the backend has a
    /// path between the two and both ranges suit it (see [`CopyPath`]), else through the host.
    /// The copy runs after the work recorded so far on both devices, and their work recorded
    /// later waits for it: on either device, nothing recorded after a copy overlaps it.
    ///
    /// # Errors
    /// [`Error::InvalidRange`] for a range past either allocation, or overlapping ranges of one
    /// allocation; [`Error::StaleHandle`] for a released handle or one of another device than
    /// it says; [`Error::InvalidParameter`] for a device past the set; transfer errors of
    /// either device.
    pub fn copy_range(
        &self,
        src: DeviceHandle,
        src_offset: u64,
        dst: DeviceHandle,
        dst_offset: u64,
        len: u64,
    ) -> Result<CopyPath> {
        let (from, to) = (self.device(src.device)?, self.device(dst.device)?);
        for (ctx, h, at) in [(from, src, src_offset), (to, dst, dst_offset)] {
            let size = ctx.observe().size_of(h.handle)?;
            if at.checked_add(len).is_none_or(|end| end > size) {
                return Err(Error::InvalidRange {
                    label: ctx.observe().allocation_info(h.handle)?.label.to_string(),
                    offset: at,
                    len,
                    size,
                    reason: "the copy's range passes the allocation's end",
                });
            }
        }
        if src == dst && src_offset.max(dst_offset) - src_offset.min(dst_offset) < len {
            return Err(Error::InvalidRange {
                label: from
                    .observe()
                    .allocation_info(src.handle)?
                    .label
                    .to_string(),
                offset: dst_offset,
                len,
                size: from.observe().size_of(src.handle)?,
                reason: "the source and destination ranges overlap; copy through a temporary",
            });
        }
        if len == 0 {
            return Ok(CopyPath::Device);
        }
        let (s, d) = ((src.handle, src_offset), (dst.handle, dst_offset));
        if super::direct::copy(from, s, to, d, len)? {
            return Ok(CopyPath::Device);
        }
        let chunk = from
            .transfers()
            .staging_chunk()
            .min(to.transfers().staging_chunk())
            .min(len);
        let mut bounce = crate::types::host_bytes::host_buffer(chunk, "a copy's bounce buffer")?;
        let mut done = 0;
        while done < len {
            let n = (len - done).min(chunk) as usize;
            from.transfers()
                .download_into(src.handle, src_offset + done, &mut bounce[..n])?;
            to.transfers()
                .upload_at(dst.handle, dst_offset + done, &bounce[..n])?;
            done += n as u64;
        }
        Ok(CopyPath::Host)
    }
}
