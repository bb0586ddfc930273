//! The bytes of a host block, reached only range by range.
//!
//! A host block's address can be handed to outside code ([`Storage::device_address`]), which
//! then writes its own ranges through raw pointers while vramkit reaches other ranges of the
//! same block. So no reference ever covers the whole block: every access makes a slice of
//! just the range it touches, from the raw pointer.
//!
//! [`Storage::device_address`]: super::Storage::device_address

use std::alloc::Layout;
use std::ops::Range;
use std::ptr::NonNull;

use super::host::{HostBackend, HostBlock};
use super::host_pages::POISON;

/// Zeroed bytes from the global allocator, owned by raw pointer; empty for no bytes.
pub(super) struct HostBytes {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `HostBytes` owns its allocation as a `Box<[u8]>` would; the pointer is not shared
// with other Rust values.
unsafe impl Send for HostBytes {}
// SAFETY: `&HostBytes` only reads (`range`, `address`), as `&Box<[u8]>` would.
unsafe impl Sync for HostBytes {}

impl std::fmt::Debug for HostBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostBytes({} bytes)", self.len)
    }
}

impl HostBytes {
    /// No bytes (a null device's block).
    pub(super) fn empty() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    /// `len` zero bytes from the allocator's zeroing path (calloc): large blocks come from
    /// fresh pages the OS zeroes on first touch, so a block costs memory and time only where
    /// it is used, as device memory does. `None` when the host has no memory for it.
    pub(super) fn zeroed(len: usize) -> Option<Self> {
        if len == 0 {
            return Some(Self::empty());
        }
        let layout = Layout::array::<u8>(len).ok()?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
        Some(Self { ptr, len })
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first byte.
    pub(super) fn address(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// The bytes of `r`, which lies inside (callers check; out of range panics).
    pub(super) fn range(&self, r: Range<usize>) -> &[u8] {
        assert!(r.start <= r.end && r.end <= self.len, "host block range");
        // SAFETY: `r` lies inside the allocation (asserted), whose bytes are initialised; the
        // slice covers only `r`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(r.start), r.end - r.start) }
    }

    /// The bytes of `r`, which lies inside, for writing.
    pub(super) fn range_mut(&mut self, r: Range<usize>) -> &mut [u8] {
        assert!(r.start <= r.end && r.end <= self.len, "host block range");
        // SAFETY: as in `range`; `&mut self` keeps every other slice of vramkit's away.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(r.start), r.end - r.start) }
    }

    /// Copies `len` bytes at `from` to `to` within the block (the ranges may overlap).
    pub(super) fn copy_within(&mut self, from: usize, to: usize, len: usize) {
        assert!(
            from.max(to).saturating_add(len) <= self.len,
            "host block range"
        );
        // SAFETY: both ranges lie inside the allocation (asserted); `copy` allows overlap.
        unsafe { std::ptr::copy(self.ptr.as_ptr().add(from), self.ptr.as_ptr().add(to), len) }
    }

    /// Resizes to `len` bytes in place where the allocator can (glibc remaps large blocks'
    /// pages), new bytes zero. `false` leaves the bytes as they were (no memory).
    pub(super) fn resize(&mut self, len: usize) -> bool {
        if self.len == 0 || len == 0 {
            let Some(new) = Self::zeroed(len) else {
                return false;
            };
            *self = new;
            return true;
        }
        let (Ok(old_layout), Ok(_)) = (Layout::array::<u8>(self.len), Layout::array::<u8>(len))
        else {
            return false;
        };
        // SAFETY: `ptr` was allocated by the global allocator with `old_layout`, and `len` is
        // non-zero and a valid array size.
        let grown = unsafe { std::alloc::realloc(self.ptr.as_ptr(), old_layout, len) };
        let Some(grown) = NonNull::new(grown) else {
            // realloc failed: `ptr` still owns the original allocation.
            return false;
        };
        if len > self.len {
            // SAFETY: `grown` holds `len` bytes; the ones past the old length are
            // uninitialised.
            unsafe { grown.as_ptr().add(self.len).write_bytes(0, len - self.len) };
        }
        self.ptr = grown;
        self.len = len;
        true
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        if let Ok(layout) = Layout::array::<u8>(self.len) {
            // SAFETY: `ptr` was allocated by the global allocator with this layout and is
            // freed once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

impl HostBackend {
    /// Copies `size` bytes between blocks (or within one), any alignment. The caller keeps
    /// both ranges inside their blocks (`Storage::copy`'s and the texture copies' contracts).
    pub(super) fn copy_bytes(
        &self,
        src: &HostBlock,
        src_offset: u64,
        dst: &HostBlock,
        dst_offset: u64,
        size: u64,
    ) {
        self.check_mapped(src, src_offset, size, "a copy's source");
        self.check_mapped(dst, dst_offset, size, "a copy's destination");
        if !self.config.keep_bytes {
            // A null device moves nothing.
        } else if std::ptr::eq(src, dst) {
            lock(src).copy_within(src_offset as usize, dst_offset as usize, size as usize);
        } else {
            let from = lock(src);
            lock(dst)
                .range_mut(range(dst_offset, size))
                .copy_from_slice(from.range(range(src_offset, size)));
        }
    }
}

pub(super) fn lock(block: &HostBlock) -> std::sync::MutexGuard<'_, HostBytes> {
    // A panic while holding the lock cannot leave the bytes in a state worse than a torn copy.
    block.bytes.lock().unwrap_or_else(|e| e.into_inner())
}

/// Overwrites `r` of `block` with what unmapped bytes read as (its memory went).
pub(super) fn poison(block: &HostBlock, r: std::ops::Range<u64>) {
    let mut bytes = lock(block);
    if !bytes.is_empty() {
        bytes
            .range_mut(range(r.start, r.end - r.start))
            .fill(POISON);
    }
}

pub(super) fn range(offset: u64, len: u64) -> std::ops::Range<usize> {
    offset as usize..(offset + len) as usize
}
