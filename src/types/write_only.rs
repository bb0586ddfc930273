//! A write-only view of bytes: what a staging fill hands a producer (pinned memory on CUDA, a
//! mapped buffer on wgpu, a temporary on the host). Mapped memory may be write-combining, where
//! reads are very slow, and staging's old bytes are none of the producer's business, so the view
//! only writes. The wgpu backend converts wgpu's own view (`wgpu::WriteOnly<[u8]>`) into it, so
//! the backend seam names no wgpu type.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::ptr::NonNull;

/// Exclusive, write-only access to `len()` bytes for `'a`, as `&'a mut [u8]` without reads.
///
/// ```
/// let mut bytes = [0u8; 8];
/// let mut view = vramkit::transfers::WriteOnly::from_mut(&mut bytes);
/// view.slice(2..6).copy_from_slice(&[1, 2, 3, 4]);
/// view.slice(6..).fill(9);
/// assert_eq!(bytes, [0, 0, 1, 2, 3, 4, 9, 9]);
/// ```
pub struct WriteOnly<'a> {
    ptr: NonNull<u8>,
    len: usize,
    _bytes: PhantomData<&'a mut [u8]>,
}

// SAFETY: a `WriteOnly` is an exclusive borrow of bytes, as `&mut [u8]`, which is `Send`.
unsafe impl Send for WriteOnly<'_> {}
// SAFETY: through `&WriteOnly` nothing can be read or written (only the length), so sharing
// it is as sound as sharing `&mut [u8]`.
unsafe impl Sync for WriteOnly<'_> {}

impl<'a> WriteOnly<'a> {
    /// The view of `bytes`.
    pub fn from_mut(bytes: &'a mut [u8]) -> Self {
        let len = bytes.len();
        Self {
            ptr: NonNull::from(bytes).cast(),
            len,
            _bytes: PhantomData,
        }
    }

    /// The view of `len` bytes at `ptr`.
    ///
    /// # Safety
    /// 1. `ptr .. ptr + len` is valid for writes for `'a` (any pointer where `len` is 0), and
    ///    `len` is at most `isize::MAX`.
    /// 2. Nothing else reads or writes those bytes while the view (or a view split from it)
    ///    lives.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> Self {
        debug_assert!(!ptr.is_null() || len == 0, "a null pointer to {len} bytes");
        Self {
            ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
            len,
            _bytes: PhantomData,
        }
    }

    /// Bytes in the view.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The view of `range` of these bytes, for as long as this view is borrowed.
    ///
    /// # Panics
    /// If `range` is out of bounds or decreasing, as slice indexing.
    pub fn slice(&mut self, range: impl RangeBounds<usize>) -> WriteOnly<'_> {
        let (start, end) = self.bounds(range);
        WriteOnly {
            // SAFETY: `start <= end <= len`: inside the view's bytes.
            ptr: unsafe { self.ptr.add(start) },
            len: end - start,
            _bytes: PhantomData,
        }
    }

    /// The view split in two at `mid`: `..mid` and `mid..`.
    ///
    /// # Panics
    /// If `mid > len()`, as `<[u8]>::split_at_mut`.
    pub fn split_at(self, mid: usize) -> (WriteOnly<'a>, WriteOnly<'a>) {
        assert!(
            mid <= self.len,
            "split at {mid} of a {}-byte write-only view",
            self.len
        );
        let tail = WriteOnly {
            // SAFETY: `mid <= len`: inside the view's bytes.
            ptr: unsafe { self.ptr.add(mid) },
            len: self.len - mid,
            _bytes: PhantomData,
        };
        let head = WriteOnly {
            ptr: self.ptr,
            len: mid,
            _bytes: PhantomData,
        };
        (head, tail)
    }

    /// Writes `src` over the view.
    ///
    /// # Panics
    /// If the lengths differ, as `<[u8]>::copy_from_slice`.
    pub fn copy_from_slice(&mut self, src: &[u8]) {
        assert_eq!(
            src.len(),
            self.len,
            "copying {} bytes into a {}-byte write-only view",
            src.len(),
            self.len
        );
        // SAFETY: the view holds `len` writable bytes exclusively (so `src`, a shared borrow,
        // cannot overlap them).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr(), self.len) };
    }

    /// Writes the bytes of `iter` over the view from its start, until either runs out.
    pub fn write_iter(self, iter: impl IntoIterator<Item = u8>) {
        for (i, b) in iter.into_iter().take(self.len).enumerate() {
            // SAFETY: `i < len`: a byte the view holds exclusively.
            unsafe { self.ptr.add(i).write(b) };
        }
    }

    /// Writes `value` into every byte of the view.
    pub fn fill(&mut self, value: u8) {
        // SAFETY: the view holds `len` writable bytes exclusively.
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr(), value, self.len) };
    }

    /// The first byte's address, for writes of the caller's own (streaming stores, a copy
    /// engine): `len()` bytes from it are writable until the view (or a view split from it) is
    /// next used or dropped.
    pub fn as_raw_ptr(&mut self) -> NonNull<u8> {
        self.ptr
    }

    fn bounds(&self, range: impl RangeBounds<usize>) -> (usize, usize) {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.checked_add(1).expect("a range starting past usize::MAX"),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1).expect("a range ending past usize::MAX"),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        assert!(
            start <= end && end <= self.len,
            "range {start}..{end} of a {}-byte write-only view",
            self.len
        );
        (start, end)
    }
}

impl<'a> From<&'a mut [u8]> for WriteOnly<'a> {
    fn from(bytes: &'a mut [u8]) -> Self {
        Self::from_mut(bytes)
    }
}

impl std::fmt::Debug for WriteOnly<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WriteOnly({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::WriteOnly;

    #[test]
    fn slices_split_copy_and_fill_write_where_they_say() {
        let mut bytes = [0u8; 10];
        let mut v = WriteOnly::from_mut(&mut bytes);
        assert_eq!(v.len(), 10);
        v.slice(..3).fill(1);
        v.slice(3..=4).copy_from_slice(&[7, 8]);
        let (mut head, mut tail) = v.split_at(5);
        assert_eq!((head.len(), tail.len()), (5, 5));
        tail.slice(4..).fill(9);
        assert!(head.slice(5..).is_empty());
        assert_eq!(bytes, [1, 1, 1, 7, 8, 0, 0, 0, 0, 9]);
        let mut short = [0u8; 3];
        WriteOnly::from_mut(&mut short).write_iter(5..);
        assert_eq!(short, [5, 6, 7]);
        let mut long = [0u8; 3];
        WriteOnly::from_mut(&mut long).write_iter([1]);
        assert_eq!(long, [1, 0, 0]);
    }

    #[test]
    #[should_panic(expected = "range 4..11 of a 10-byte write-only view")]
    fn a_slice_past_the_end_panics_as_slices_do() {
        let mut bytes = [0u8; 10];
        WriteOnly::from_mut(&mut bytes).slice(4..11);
    }
}
