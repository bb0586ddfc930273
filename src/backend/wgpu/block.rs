//! wgpu buffers as raw blocks, and mapping them for host access.
//!
//! A host-visible block is mapped whole, lazily, and stays mapped until the device next uses it
//! ([`WgpuBlock::unmap_for_gpu`]), so a run of host writes costs one map.

use std::sync::Mutex;

use crate::types::error::{Error, Result};
use crate::types::MemoryKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mapped {
    No,
    Read,
    Write,
}

/// A raw wgpu buffer owned by the memory manager.
#[derive(Debug)]
pub struct WgpuBlock {
    pub(super) buffer: wgpu::Buffer,
    mapped: Mutex<Mapped>,
}

/// Buffer usages for each memory kind (a block of kind `Texture`, which the memory manager never
/// asks for, is plain device memory).
pub(super) fn usages(kind: MemoryKind) -> wgpu::BufferUsages {
    use wgpu::BufferUsages as U;
    match kind {
        MemoryKind::Device | MemoryKind::Texture => U::STORAGE | U::COPY_SRC | U::COPY_DST,
        MemoryKind::Upload => U::MAP_WRITE | U::COPY_SRC,
        MemoryKind::Readback => U::MAP_READ | U::COPY_DST,
        MemoryKind::Unified => U::STORAGE | U::COPY_SRC | U::COPY_DST | U::MAP_READ | U::MAP_WRITE,
    }
}

impl WgpuBlock {
    pub(super) fn new(buffer: wgpu::Buffer, mapped_at_creation: bool) -> Self {
        let state = if mapped_at_creation {
            Mapped::Write
        } else {
            Mapped::No
        };
        Self {
            buffer,
            mapped: Mutex::new(state),
        }
    }

    /// The wgpu buffer, for interop with code that uses wgpu directly.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Mapped> {
        self.mapped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Unmaps the block if the host has it mapped: the device can not use mapped buffers.
    pub(super) fn unmap_for_gpu(&self) {
        let mut state = self.state();
        if *state != Mapped::No {
            self.buffer.unmap();
            *state = Mapped::No;
        }
    }

    /// Whether the host has the block mapped for writing (`true`) or reading (`false`).
    pub(super) fn is_mapped(&self, write: bool) -> bool {
        *self.state() == if write { Mapped::Write } else { Mapped::Read }
    }

    /// Maps the block in `mode` (waiting for the device) and runs `f` on the aligned mapped range
    /// that covers `offset..offset + len`, with the start of the asked-for bytes inside it.
    pub(super) fn with_mapped<R>(
        &self,
        device: &wgpu::Device,
        write: bool,
        offset: u64,
        len: u64,
        f: impl FnOnce(&wgpu::Buffer, std::ops::Range<u64>, usize) -> Result<R>,
    ) -> Result<R> {
        let want = if write { Mapped::Write } else { Mapped::Read };
        let mut state = self.state();
        if *state != want {
            if *state != Mapped::No {
                self.buffer.unmap();
                *state = Mapped::No;
            }
            let mode = if write {
                wgpu::MapMode::Write
            } else {
                wgpu::MapMode::Read
            };
            map_blocking(device, &self.buffer, mode)?;
            *state = want;
        }
        // Mapped views start at multiples of 8 and span multiples of 4 bytes.
        let start = offset & !(wgpu::MAP_ALIGNMENT - 1);
        let end = (offset + len)
            .next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            .min(self.buffer.size());
        f(&self.buffer, start..end, (offset - start) as usize)
    }
}

fn map_blocking(device: &wgpu::Device, buffer: &wgpu::Buffer, mode: wgpu::MapMode) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(mode, .., move |r| {
        // The receiver lives until this function returns; a send after that is of no interest.
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::Poll)
        .map_err(super::poll_error)?;
    let result = match rx.try_recv() {
        Ok(r) => r,
        Err(_) => {
            device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(super::poll_error)?;
            rx.recv().map_err(|_| Error::Backend {
                message: "the buffer map callback was dropped without running".into(),
            })?
        }
    };
    result.map_err(|e| Error::Backend {
        message: format!("mapping a {mode:?} buffer failed: {e}"),
    })
}
