//! The wgpu backend: Vulkan, Metal and DX12 (and Mesa's lavapipe, headless).
//!
//! wgpu reports out-of-memory and validation failures through error scopes and a device-lost
//! callback, not return values: buffer creation and kernel compilation run inside scopes, and a
//! lost device turns every later call into [`Error::DeviceLost`].
//!
//! The backend opens its own device ([`WgpuBackend::new`], `adapter.rs`) or takes one the
//! application owns ([`WgpuBackend::from_device`], `create.rs`). vramkit records into one
//! encoder of its own and submits it on the device's queue; an application that shares the
//! device binds vramkit's allocations in its own passes and tells vramkit which of its
//! submissions used them (`external.rs`, and the rules in [`crate::interop`]): wgpu's one
//! queue orders both.

mod adapter;
mod block;
mod compute;
pub(crate) mod copy;
mod create;
mod external;
mod kernel;
mod peer;
mod submit;
mod texture;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub use adapter::WgpuConfig;
pub use block::WgpuBlock;
pub use kernel::WgpuKernel;
use submit::Recorder;
pub use texture::WgpuTexture;

use super::{BackendLimits, DeviceInfo, MemoryInfo, Storage};
use crate::types::error::{Error, Result};
use crate::types::lock;
use crate::types::texture::{TextureCopy, TextureDesc};
use crate::types::write_only::WriteOnly;
use crate::types::{MemoryKind, QueueIndex};

/// The wgpu backend. See the [module docs](self).
pub struct WgpuBackend {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    limits: BackendLimits,
    info: DeviceInfo,
    recorder: Mutex<Recorder>,
    /// Submissions in flight; `None` for one the device refused (nothing of it runs).
    submitted: Mutex<VecDeque<(QueueIndex, Option<wgpu::SubmissionIndex>)>>,
    /// Submissions the device refused and the manager has not yet learnt of, with what they
    /// held, in order.
    refused: Mutex<Vec<(QueueIndex, String)>>,
    completed: Arc<AtomicU64>,
    lost: Arc<OnceLock<String>>,
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// The kernel that copies within one buffer, built on first use.
    copy_kernel: OnceLock<WgpuKernel>,
    /// The linear clamp-to-edge sampler of texture kernels, made on first use.
    sampler: OnceLock<wgpu::Sampler>,
    /// The cooperative-matrix configurations the device was opened with (see `adapter`).
    cooperative: Vec<crate::backend::CooperativeMatrix>,
    /// Shared by the backends of one device ([`on_same_device`](Self::on_same_device)).
    shared: Arc<()>,
}

impl std::fmt::Debug for WgpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuBackend")
            .field("info", &self.info)
            .finish()
    }
}

pub(crate) fn poll_error(e: wgpu::PollError) -> Error {
    Error::Backend {
        message: format!("polling the device failed: {e}"),
    }
}

impl WgpuBackend {
    /// The wgpu device, for interop with code that uses wgpu directly.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The wgpu adapter (its features, limits and cooperative-matrix configurations).
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The wgpu adapter's own description.
    pub fn adapter_info(&self) -> wgpu::AdapterInfo {
        self.adapter.get_info()
    }

    fn check_lost(&self) -> Result<()> {
        match self.lost.get() {
            Some(reason) => Err(Error::DeviceLost {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }
}

// SAFETY: see the promises of `Storage`: blocks hold what was asked, work runs in order.
unsafe impl Storage for WgpuBackend {
    type Block = WgpuBlock;
    type Texture = WgpuTexture;

    fn device_info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn limits(&self) -> &BackendLimits {
        &self.limits
    }

    fn memory_info(&self) -> Option<MemoryInfo> {
        // WebGPU exposes no memory totals.
        None
    }

    fn check_device(&self) -> Result<()> {
        self.check_lost()
    }

    fn supports(&self, kind: MemoryKind) -> Result<()> {
        if kind == MemoryKind::Unified
            && !self
                .device
                .features()
                .contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        {
            return Err(Error::Unsupported {
                what: "MemoryKind::Unified".into(),
                reason: format!(
                    "adapter `{}` offers no host-visible storage buffers \
                     (MAPPABLE_PRIMARY_BUFFERS); use MemoryKind::Device with upload/download",
                    self.info.name
                ),
            });
        }
        Ok(())
    }

    fn alloc_block(&self, size: u64, kind: MemoryKind) -> Result<WgpuBlock> {
        self.check_lost()?;
        self.supports(kind)?;
        let mapped_at_creation = kind == MemoryKind::Upload;
        let (buffer, error) = self.scoped(|| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(match kind {
                    MemoryKind::Device => "vramkit device block",
                    MemoryKind::Upload => "vramkit upload block",
                    MemoryKind::Readback => "vramkit readback block",
                    MemoryKind::Unified => "vramkit unified block",
                    MemoryKind::Texture => "vramkit texture-kind block",
                }),
                size,
                usage: block::usages(kind),
                mapped_at_creation,
            })
        });
        match error {
            None => Ok(WgpuBlock::new(buffer, mapped_at_creation)),
            Some(e) => {
                self.check_lost()?;
                Err(match e {
                    wgpu::Error::OutOfMemory { .. } | wgpu::Error::Internal { .. } => {
                        Error::OutOfMemory {
                            requested: size,
                            kind,
                            detail: e.to_string(),
                        }
                    }
                    wgpu::Error::Validation { description, .. } => Error::Backend {
                        message: format!("creating a {size}-byte {kind:?} buffer: {description}"),
                    },
                })
            }
        }
    }

    unsafe fn free_block(&self, block: WgpuBlock) {
        block.buffer.destroy();
    }

    fn max_slide_pieces(&self) -> u64 {
        // A copy within one buffer is a compute pass with a params buffer and a bind group of
        // its own: sliding in thousands of pieces beside transfers cut their throughput 16×
        // on lavapipe. One piece: an allocation slides only over a gap at least its size.
        1
    }

    fn abandon_block(&self, block: WgpuBlock) {
        // Not destroyed: the application's `WgpuBinding`s hold the buffer, and wgpu frees it
        // when the last of them is dropped.
        drop(block);
    }

    unsafe fn write_host(&self, block: &WgpuBlock, offset: u64, data: &[u8]) -> Result<()> {
        self.check_lost()?;
        self.submit_before_map(block, true)?;
        block.with_mapped(
            &self.device,
            true,
            offset,
            data.len() as u64,
            |buffer, range, at| {
                let mut view = buffer
                    .get_mapped_range_mut(range)
                    .map_err(|e| Error::Backend {
                        message: format!("mapped write: {e}"),
                    })?;
                crate::types::host_bytes::stream_copy(data, view.slice(at..at + data.len()).into());
                Ok(())
            },
        )
    }

    unsafe fn read_host(&self, block: &WgpuBlock, offset: u64, out: &mut [u8]) -> Result<()> {
        self.check_lost()?;
        self.submit_before_map(block, false)?;
        block.with_mapped(
            &self.device,
            false,
            offset,
            out.len() as u64,
            |buffer, range, at| {
                let view = buffer.get_mapped_range(range).map_err(|e| Error::Backend {
                    message: format!("mapped read: {e}"),
                })?;
                crate::types::host_bytes::par_copy(&view[at..at + out.len()], out);
                Ok(())
            },
        )
    }

    unsafe fn fill_host(
        &self,
        block: &WgpuBlock,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(WriteOnly<'_>),
    ) -> Result<()> {
        self.check_lost()?;
        self.submit_before_map(block, true)?;
        block.with_mapped(
            &self.device,
            true,
            offset,
            len as u64,
            |buffer, range, at| {
                let mut view = buffer
                    .get_mapped_range_mut(range)
                    .map_err(|e| Error::Backend {
                        message: format!("mapped write: {e}"),
                    })?;
                f(view.slice(at..at + len).into());
                Ok(())
            },
        )
    }

    unsafe fn view_host(
        &self,
        block: &WgpuBlock,
        offset: u64,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        self.check_lost()?;
        self.submit_before_map(block, false)?;
        block.with_mapped(
            &self.device,
            false,
            offset,
            len as u64,
            |buffer, range, at| {
                let view = buffer.get_mapped_range(range).map_err(|e| Error::Backend {
                    message: format!("mapped read: {e}"),
                })?;
                f(&view[at..at + len]);
                Ok(())
            },
        )
    }

    unsafe fn copy(
        &self,
        src: &WgpuBlock,
        src_offset: u64,
        dst: &WgpuBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<QueueIndex> {
        if std::ptr::eq(src, dst) {
            // SAFETY: the caller's promises: both ranges lie in the block, do not overlap, and
            // are aligned.
            return unsafe { self.copy_within(src, src_offset, dst_offset, size) };
        }
        src.unmap_for_gpu();
        dst.unmap_for_gpu();
        self.record(|e| {
            e.copy_buffer_to_buffer(&src.buffer, src_offset, &dst.buffer, dst_offset, size)
        })
    }

    unsafe fn copy_to_peer(
        &self,
        src: &WgpuBlock,
        src_offset: u64,
        peer: &Self,
        dst: &WgpuBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<Option<(QueueIndex, QueueIndex)>> {
        // SAFETY: the caller's promises, passed on.
        unsafe { self.copy_peer(src, src_offset, peer, dst, dst_offset, size) }
    }

    unsafe fn clear(&self, block: &WgpuBlock, offset: u64, size: u64) -> Result<QueueIndex> {
        block.unmap_for_gpu();
        self.record(|e| e.clear_buffer(&block.buffer, offset, Some(size)))
    }

    fn alloc_texture(&self, desc: &TextureDesc) -> Result<(WgpuTexture, Option<u64>)> {
        self.new_texture(desc)
    }

    unsafe fn free_texture(&self, texture: WgpuTexture) {
        texture.texture.destroy();
    }

    unsafe fn copy_to_texture(
        &self,
        src: &WgpuBlock,
        offset: u64,
        dst: &WgpuTexture,
        copy: TextureCopy,
    ) -> Result<QueueIndex> {
        self.texture_copy(src, offset, dst, copy, true)
    }

    unsafe fn copy_from_texture(
        &self,
        src: &WgpuTexture,
        copy: TextureCopy,
        dst: &WgpuBlock,
        offset: u64,
    ) -> Result<QueueIndex> {
        self.texture_copy(dst, offset, src, copy, false)
    }

    fn refused_submissions(&self) -> Vec<(QueueIndex, String)> {
        std::mem::take(&mut *lock(&self.refused))
    }

    fn submit(&self) -> Result<QueueIndex> {
        self.submit_now(false)
    }

    fn is_done(&self, index: QueueIndex) -> Result<bool> {
        if self.completed.load(Ordering::Acquire) >= index {
            return Ok(true);
        }
        self.check_lost()?;
        self.device.poll(wgpu::PollType::Poll).map_err(poll_error)?;
        Ok(self.completed.load(Ordering::Acquire) >= index)
    }

    fn wait(&self, index: QueueIndex) -> Result<()> {
        if self.completed.load(Ordering::Acquire) >= index {
            return Ok(());
        }
        self.check_lost()?;
        if lock(&self.recorder).open <= index {
            self.submit()?;
        }
        // The first submission from `index` on that the device took: waiting for it waits for
        // `index` (a refused one runs nothing); none: wait for everything.
        let target = lock(&self.submitted)
            .iter()
            .filter(|(n, _)| *n >= index)
            .find_map(|(_, i)| i.clone());
        let poll = wgpu::PollType::Wait {
            submission_index: target,
            timeout: None,
        };
        self.device
            .poll(poll)
            .map_err(|e| self.check_lost().err().unwrap_or_else(|| poll_error(e)))?;
        self.completed.fetch_max(index, Ordering::AcqRel);
        self.prune_submitted();
        self.check_lost()
    }
}

/// wgpu's mapped write view as the seam's.
impl<'a> From<wgpu::WriteOnly<'a, [u8]>> for WriteOnly<'a> {
    fn from(mut view: wgpu::WriteOnly<'a, [u8]>) -> Self {
        let len = view.len();
        let ptr = view.as_raw_element_ptr();
        // SAFETY: wgpu's view holds `len` writable bytes at `ptr` exclusively for `'a`, and it
        // is consumed here.
        unsafe { Self::from_raw(ptr.as_ptr(), len) }
    }
}
