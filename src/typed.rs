//! Typed transfers on [`Context`]: slices of any [`Pod`] type in and out of allocations, over
//! the byte paths ([`Transfers::upload_at`](crate::transfers::Transfers::upload_at), [`Transfers::download_into`](crate::transfers::Transfers::download_into)) with no extra copy.
//!
//! Offsets are counted in elements of `T`: element `i` starts at byte `i × size_of::<T>()` of
//! the allocation, whatever the allocation was written as before. An allocation holds whole
//! `T`s when its size is a multiple of `size_of::<T>()`; [`Context::download_vec`] asks for
//! that, the other calls only that their range lies inside the allocation.

use bytemuck::Pod;

use crate::backend::Backend;
use crate::memory::BufferHandle;
use crate::types::error::{Error, Result};
use crate::Context;

/// `size_of::<T>()`, or a typed error for a zero-sized `T` (no bytes to move, no element to
/// count).
fn element_size<T>() -> Result<u64> {
    match size_of::<T>() {
        0 => Err(Error::InvalidParameter {
            name: "T",
            value: std::any::type_name::<T>().into(),
            reason: "a zero-sized element type has no bytes to move; transfer a type of at \
                     least one byte (u8 for raw bytes)",
        }),
        s => Ok(s as u64),
    }
}

impl<B: Backend> Context<B> {
    /// The byte offset of element `first` of `T`s, or [`Error::InvalidRange`] when it does not
    /// fit in 64 bits (it then lies past the end of every allocation).
    pub(crate) fn element_offset<T>(
        &self,
        handle: BufferHandle,
        first: u64,
        count: usize,
    ) -> Result<u64> {
        let size = element_size::<T>()?;
        match first.checked_mul(size) {
            Some(offset) => Ok(offset),
            None => {
                let info = self.observe().allocation_info(handle)?;
                Err(Error::InvalidRange {
                    label: info.label.to_string(),
                    offset: u64::MAX,
                    len: (count as u64).saturating_mul(size),
                    size: info.size,
                    reason: "the first element's byte offset (first × size_of::<T>()) passes \
                             2^64: it lies past the allocation's end; count elements from the \
                             start of the allocation",
                })
            }
        }
    }

    /// Writes `data` at the start of an allocation, as bytes in the host's order (the
    /// device's on every backend vramkit has). Bytes past `data` are kept.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("x", 16))?;
    /// ctx.upload_slice(h, &[1.5f32, 2.5, 3.5, 4.5])?;
    /// assert_eq!(ctx.download_vec::<f32>(h)?, [1.5, 2.5, 3.5, 4.5]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidRange`] if `data` is longer than the allocation;
    /// [`Error::InvalidParameter`] for a zero-sized `T`; [`Error::StaleHandle`]; as
    /// [`upload`](Self::upload).
    pub fn upload_slice<T: Pod>(&self, handle: BufferHandle, data: &[T]) -> Result<()> {
        self.transfers().upload_slice_at(handle, 0, data)
    }

    /// Reads a whole allocation back as `T`s, in a `Vec<T>` allocated as `T`s (aligned for
    /// `T`, whatever its alignment). Waits for the device.
    ///
    /// ```
    /// let ctx = vramkit::Context::host(Default::default());
    /// let h = ctx.alloc(vramkit::AllocDesc::new("rgba", 2 * 4))?;
    /// ctx.upload_slice(h, &[[255u8, 0, 0, 255], [0, 0, 255, 128]])?;
    /// let pixels: Vec<[u8; 4]> = ctx.download_vec(h)?;
    /// assert_eq!(pixels[1], [0, 0, 255, 128]);
    /// # Ok::<(), vramkit::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when the allocation's size is not a multiple of
    /// `size_of::<T>()` (it holds no whole number of `T`s: read the whole ones with
    /// [`download_into_slice`](crate::transfers::Transfers::download_into_slice), or bytes with
    /// [`download`](Self::download)); [`Error::InvalidParameter`] for a zero-sized `T`;
    /// [`Error::HostOutOfMemory`] when the host cannot hold the result;
    /// [`Error::StaleHandle`]; as [`download`](Self::download).
    pub fn download_vec<T: Pod>(&self, handle: BufferHandle) -> Result<Vec<T>> {
        let element = element_size::<T>()?;
        let size = self.observe().size_of(handle)?;
        if size % element != 0 {
            let info = self.observe().allocation_info(handle)?;
            let name = std::any::type_name::<T>();
            return Err(Error::ShapeMismatch {
                expected: format!(
                    "an allocation of whole `{name}`s: a multiple of {element} bytes \
                     (size_of::<{name}>())"
                ),
                actual: format!(
                    "`{}` of {size} bytes, {} `{name}`s and {} bytes; read the whole ones with \
                     download_into_slice, or the bytes with download",
                    info.label,
                    size / element,
                    size % element
                ),
            });
        }
        let mut out: Vec<T> =
            crate::types::host_bytes::host_zeroed(size, "the result of a download_vec")?;
        self.transfers()
            .download_into(handle, 0, bytemuck::cast_slice_mut(&mut out))?;
        Ok(out)
    }
}
