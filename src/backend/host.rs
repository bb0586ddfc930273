//! A backend over plain host memory.
//!
//! The memory manager's tests and benchmarks run on it with no GPU, and it can emulate a device
//! of a given capacity (so out-of-memory paths are testable). Work runs at once, so every
//! submission is complete as soon as it is recorded. It runs no shaders.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::host_bytes::{lock, range, HostBytes};
pub use super::host_config::HostConfig;
use super::host_null::NullSpan;
use super::host_pages::{HostPages, POISON};
use super::host_pieces::PieceOp;
use super::host_streams::HostStreams;
use super::{BackendLimits, DeviceInfo, LinearTexture, MemoryInfo, PageGrid, Storage};
use super::{ForeignStream, StreamMark};
use crate::types::error::{Error, Result};
use crate::types::texture::{TextureCopy, TextureDesc};
use crate::types::write_only::WriteOnly;
use crate::types::{MemoryKind, QueueIndex};

/// A block of host memory.
#[derive(Debug)]
pub struct HostBlock {
    /// Empty on a null device.
    pub(super) bytes: Mutex<HostBytes>,
    pub(super) size: AtomicU64,
    /// Ranges given back ([`Storage::unmap_pages`]).
    pub(super) pages: HostPages,
    /// On a null device with [`HostConfig::reserve`]: the block's place in address space no
    /// memory is behind ([`host_null`](super::host_null); address 0: none).
    pub(super) null_span: NullSpan,
}

impl Drop for HostBlock {
    /// A null block's addresses go back for later blocks, however the block goes (freed,
    /// or dropped with its context).
    fn drop(&mut self) {
        self.null_span.give_back();
    }
}

/// The host backend. See the [module docs](self).
#[derive(Debug)]
pub struct HostBackend {
    pub(super) config: HostConfig,
    used: AtomicU64,
    recorded: AtomicU64,
    pub(super) streams: HostStreams,
    /// An access to memory given back, for the next `check_device` (a vramkit bug).
    pub(super) fault: Mutex<Option<String>>,
}

impl HostBackend {
    /// A host backend with the given settings.
    ///
    /// ```
    /// use vramkit::backend::host::{HostBackend, HostConfig};
    /// let backend = HostBackend::new(HostConfig { capacity: Some(64 << 20), ..Default::default() });
    /// # let _ = backend;
    /// ```
    pub fn new(config: HostConfig) -> Self {
        Self {
            config,
            used: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
            streams: HostStreams::default(),
            fault: Mutex::new(None),
        }
    }

    /// Counts `size` more bytes in blocks, within the emulated capacity.
    fn reserve_capacity(&self, size: u64, kind: MemoryKind) -> Result<()> {
        let prev = self.used.fetch_add(size, Ordering::AcqRel);
        match self.config.capacity {
            Some(capacity) if prev + size > capacity => {
                self.used.fetch_sub(size, Ordering::AcqRel);
                Err(Error::OutOfMemory {
                    requested: size,
                    kind,
                    detail: format!("emulated capacity {capacity} bytes, {prev} bytes in blocks"),
                })
            }
            _ => Ok(()),
        }
    }

    fn record(&self) -> QueueIndex {
        // Work is done at once; it belongs to the open submission for ordering purposes.
        self.recorded.load(Ordering::Acquire) + 1
    }
}

impl Default for HostBackend {
    fn default() -> Self {
        Self::new(HostConfig::default())
    }
}

/// A texture of the host backend: linear memory in one block.
pub type HostTexture = LinearTexture<HostBlock>;

// SAFETY: see the promises of `Storage`: blocks hold what was asked, work runs in order.
unsafe impl Storage for HostBackend {
    type Block = HostBlock;
    type Texture = HostTexture;

    fn device_info(&self) -> DeviceInfo {
        DeviceInfo {
            api: "host".into(),
            name: "host memory".into(),
            driver: "vramkit".into(),
            device_type: "cpu".into(),
        }
    }

    fn limits(&self) -> &BackendLimits {
        &self.config.limits
    }

    fn memory_info(&self) -> Option<MemoryInfo> {
        self.config.capacity.map(|total| MemoryInfo {
            total,
            free: total.saturating_sub(self.used.load(Ordering::Relaxed)),
        })
    }

    fn check_device(&self) -> Result<()> {
        match crate::types::lock(&self.fault).take() {
            Some(message) => Err(Error::Internal { message }),
            None => Ok(()),
        }
    }

    fn supports(&self, _kind: MemoryKind) -> Result<()> {
        Ok(())
    }

    fn alloc_block(&self, size: u64, kind: MemoryKind) -> Result<HostBlock> {
        let oom = |detail: String| Error::OutOfMemory {
            requested: size,
            kind,
            detail,
        };
        self.reserve_capacity(size, kind)?;
        let whole = match self.config.reserve {
            Some(r) if self.resizable(kind) => r.max(size),
            _ => size,
        };
        let bytes = if self.config.keep_bytes {
            usize::try_from(whole).ok().and_then(HostBytes::zeroed)
        } else {
            Some(HostBytes::empty())
        };
        let Some(bytes) = bytes else {
            self.used.fetch_sub(size, Ordering::AcqRel);
            return Err(oom("the host has no memory for it".into()));
        };
        let null = !self.config.keep_bytes && self.config.reserve.is_some();
        let null_span = if null && self.resizable(kind) {
            NullSpan::take(whole, size).inspect_err(|_| {
                self.used.fetch_sub(size, Ordering::AcqRel);
            })?
        } else {
            NullSpan::default()
        };
        Ok(HostBlock {
            bytes: Mutex::new(bytes),
            size: AtomicU64::new(size),
            pages: self.new_pages(kind, size),
            null_span,
        })
    }

    unsafe fn free_block(&self, block: HostBlock) {
        let mapped = block.size.load(Ordering::Acquire) - block.pages.total();
        self.used.fetch_sub(mapped, Ordering::AcqRel);
    }

    fn resizable(&self, kind: MemoryKind) -> bool {
        self.config.resizable && kind == MemoryKind::Device
    }

    fn grow_block(&self, block: &HostBlock, new_size: u64) -> Result<()> {
        let old = block.size.load(Ordering::Acquire);
        let extra = new_size.saturating_sub(old);
        self.reserve_capacity(extra, MemoryKind::Device)?;
        if let Err(e) = block.null_span.check_growth(new_size, extra) {
            self.used.fetch_sub(extra, Ordering::AcqRel);
            return Err(e);
        }
        let mut bytes = lock(block);
        if self.config.keep_bytes && self.config.reserve.is_some() {
            // Within the reservation: the new bytes, used before a shrink perhaps, read zero.
            if new_size as usize > bytes.len() {
                self.used.fetch_sub(extra, Ordering::AcqRel);
                return Err(Error::OutOfMemory {
                    requested: extra,
                    kind: MemoryKind::Device,
                    detail: format!(
                        "a block cannot grow past the {} bytes it reserved (HostConfig::reserve)",
                        bytes.len()
                    ),
                });
            }
            bytes.range_mut(range(old, extra)).fill(0);
        } else if self.config.keep_bytes {
            let n = usize::try_from(new_size).unwrap_or(usize::MAX);
            if !bytes.resize(n) {
                self.used.fetch_sub(extra, Ordering::AcqRel);
                return Err(Error::OutOfMemory {
                    requested: extra,
                    kind: MemoryKind::Device,
                    detail: "the host has no memory for it".into(),
                });
            }
        }
        self.pieces_grown(block, old, new_size);
        block.size.store(new_size, Ordering::Release);
        Ok(())
    }

    fn grow_unmapped(&self, block: &HostBlock, new_size: u64) -> Result<()> {
        let old = block.size.load(Ordering::Acquire);
        block
            .null_span
            .check_growth(new_size, new_size.saturating_sub(old))?;
        self.grow_model(block, new_size)
    }

    unsafe fn shrink_block(&self, block: &HostBlock, new_size: u64) -> Result<u64> {
        let old = block.size.load(Ordering::Acquire);
        if new_size >= old {
            return Ok(old);
        }
        let mut bytes = lock(block);
        // A block in its reservation keeps its bytes (and its address).
        if !bytes.is_empty() && self.config.reserve.is_none() {
            // Shrinking in place does not fail in practice; if it does, the block stays.
            if !bytes.resize(new_size as usize) {
                return Ok(old);
            }
        }
        block.size.store(new_size, Ordering::Release);
        self.pieces_cut(block, new_size);
        let unmapped = block.pages.cut(new_size);
        self.used
            .fetch_sub(old - new_size - unmapped, Ordering::AcqRel);
        Ok(new_size)
    }

    fn page_grid(&self, kind: MemoryKind) -> Option<PageGrid> {
        self.resizable(kind).then(|| self.grid())
    }

    unsafe fn unmap_pages(&self, block: &HostBlock, offset: u64, size: u64) -> Result<()> {
        let r = offset..offset + size;
        if !self.pieces(block, r.clone(), PieceOp::Unmap, "unmapping") {
            return Ok(());
        }
        if !block.pages.unmap(r.clone()) {
            self.fault(format!("unmapping {r:?}, which was unmapped already"));
            return Ok(());
        }
        self.used.fetch_sub(size, Ordering::AcqRel);
        let mut bytes = lock(block);
        if !bytes.is_empty() {
            bytes.range_mut(range(offset, size)).fill(POISON);
        }
        Ok(())
    }

    unsafe fn map_pages(&self, block: &HostBlock, offset: u64, size: u64) -> Result<()> {
        self.catch_up(block, offset..offset + size);
        // The device's memory first: a refusal maps nothing.
        self.reserve_capacity(size, MemoryKind::Device)?;
        if !self.pieces(block, offset..offset + size, PieceOp::Map, "mapping") {
            return Ok(());
        }
        if !block.pages.map(offset..offset + size) {
            self.used.fetch_sub(size, Ordering::AcqRel);
            self.fault(format!(
                "mapping {:?}, which was not unmapped",
                offset..offset + size
            ));
        }
        Ok(())
    }

    fn moves_pages(&self) -> bool {
        self.page_grid(MemoryKind::Device).is_some()
    }

    unsafe fn move_pages(
        &self,
        src: &HostBlock,
        from: u64,
        dst: &HostBlock,
        to: u64,
        size: u64,
    ) -> Result<()> {
        self.move_model(src, from..from + size, dst, to, None);
        Ok(())
    }

    fn defers_moves(&self) -> bool {
        self.moves_pages()
    }

    unsafe fn move_pages_after(
        &self,
        src: &HostBlock,
        from: u64,
        dst: &HostBlock,
        to: u64,
        size: u64,
        stream: ForeignStream,
    ) -> Result<()> {
        if self.streams.is_captured(stream) {
            return Err(Error::Internal {
                message: "the stream is being captured into a graph".into(),
            });
        }
        self.move_model(src, from..from + size, dst, to, Some(stream));
        Ok(())
    }

    unsafe fn write_host(&self, block: &HostBlock, offset: u64, data: &[u8]) -> Result<()> {
        let mut bytes = lock(block);
        if !bytes.is_empty() {
            bytes
                .range_mut(range(offset, data.len() as u64))
                .copy_from_slice(data);
        }
        Ok(())
    }

    unsafe fn read_host(&self, block: &HostBlock, offset: u64, out: &mut [u8]) -> Result<()> {
        let bytes = lock(block);
        if bytes.is_empty() {
            out.fill(0);
        } else {
            out.copy_from_slice(bytes.range(range(offset, out.len() as u64)));
        }
        Ok(())
    }

    unsafe fn fill_host(
        &self,
        block: &HostBlock,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(WriteOnly<'_>),
    ) -> Result<()> {
        let mut bytes = lock(block);
        if bytes.is_empty() {
            // A block that keeps no bytes (`HostConfig::keep_bytes` off): the writes go nowhere.
            let mut tmp = crate::types::host_bytes::host_buffer(len as u64, "a staging fill")?;
            f(WriteOnly::from_mut(&mut tmp[..]));
            return Ok(());
        }
        f(WriteOnly::from_mut(
            bytes.range_mut(range(offset, len as u64)),
        ));
        Ok(())
    }

    unsafe fn view_host(
        &self,
        block: &HostBlock,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let bytes = lock(block);
        if bytes.is_empty() {
            f(&vec![0; len]);
        } else {
            f(bytes.range(range(offset, len as u64)));
        }
        Ok(())
    }

    unsafe fn copy(
        &self,
        src: &HostBlock,
        src_offset: u64,
        dst: &HostBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<QueueIndex> {
        self.copy_bytes(src, src_offset, dst, dst_offset, size);
        Ok(self.record())
    }

    unsafe fn clear(&self, block: &HostBlock, offset: u64, size: u64) -> Result<QueueIndex> {
        self.check_mapped(block, offset, size, "a clear");
        let mut bytes = lock(block);
        if !bytes.is_empty() {
            bytes.range_mut(range(offset, size)).fill(0);
        }
        Ok(self.record())
    }

    fn alloc_texture(&self, desc: &TextureDesc) -> Result<(HostTexture, Option<u64>)> {
        let bytes = HostTexture::bytes(desc);
        let block = self.alloc_block(bytes, MemoryKind::Texture)?;
        Ok((HostTexture::new(block, desc), None))
    }

    unsafe fn free_texture(&self, texture: HostTexture) {
        // SAFETY: as the caller guarantees, no unfinished work uses the texture's block.
        unsafe { self.free_block(texture.block) }
    }

    unsafe fn copy_to_texture(
        &self,
        src: &HostBlock,
        offset: u64,
        dst: &HostTexture,
        copy: TextureCopy,
    ) -> Result<QueueIndex> {
        for (at, from, len) in dst.runs(copy) {
            self.copy_bytes(src, offset + from, &dst.block, at, len);
        }
        Ok(self.record())
    }

    unsafe fn copy_from_texture(
        &self,
        src: &HostTexture,
        copy: TextureCopy,
        dst: &HostBlock,
        offset: u64,
    ) -> Result<QueueIndex> {
        for (at, to, len) in src.runs(copy) {
            self.copy_bytes(&src.block, at, dst, offset + to, len);
        }
        Ok(self.record())
    }

    fn device_address(&self, block: &HostBlock) -> Option<u64> {
        // Resizable blocks may move when they grow (realloc) unless they reserved their
        // space; empty ones hold nothing.
        if block.null_span.address != 0 {
            return Some(block.null_span.address);
        }
        let bytes = lock(block);
        let stable = !self.config.resizable || self.config.reserve.is_some();
        (stable && !bytes.is_empty()).then(|| bytes.address())
    }

    fn foreign_streams(&self) -> bool {
        true
    }

    fn mark_stream(&self, stream: ForeignStream) -> Result<StreamMark> {
        Ok(self.streams.mark(stream))
    }

    fn mark_done(&self, mark: StreamMark) -> Result<bool> {
        Ok(self.streams.done(mark))
    }

    fn wait_mark(&self, mark: StreamMark) -> Result<()> {
        self.streams.wait(mark);
        Ok(())
    }

    fn forget_mark(&self, mark: StreamMark) {
        self.streams.forget(mark);
    }

    fn submit(&self) -> Result<QueueIndex> {
        Ok(self.recorded.fetch_add(1, Ordering::AcqRel) + 1)
    }

    fn is_done(&self, _index: QueueIndex) -> Result<bool> {
        Ok(true)
    }

    fn wait(&self, _index: QueueIndex) -> Result<()> {
        Ok(())
    }
}
