//! A backend over plain host memory.
//!
//! The memory manager's tests and benchmarks run on it with no GPU, and it can emulate a device
//! of a given capacity (so out-of-memory paths are testable). Work runs at once, so every
//! submission is complete as soon as it is recorded. It runs no shaders.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::{
    Backend, BackendLimits, BlockRange, Constants, DeviceInfo, KernelSource, MemoryInfo,
    MemoryKind, SubmissionIndex,
};
use crate::error::{Error, Result};

/// Settings of the emulated device.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Limits to report (defaults mirror a typical GPU: 256-byte offsets, 128 MiB bindings).
    pub limits: BackendLimits,
    /// Emulated device capacity in bytes; `None` is bounded only by the host's memory.
    pub capacity: Option<u64>,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            limits: BackendLimits {
                max_block_size: 1 << 40,
                max_binding_size: 128 << 20,
                offset_alignment: 256,
                copy_alignment: 4,
            },
            capacity: None,
        }
    }
}

/// A block of host memory.
#[derive(Debug)]
pub struct HostBlock {
    bytes: Mutex<Vec<u8>>,
}

/// The host backend. See the [module docs](self).
#[derive(Debug)]
pub struct HostBackend {
    config: HostConfig,
    used: AtomicU64,
    recorded: AtomicU64,
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
        }
    }

    fn record(&self) -> SubmissionIndex {
        // Work is done at once; it belongs to the open submission for ordering purposes.
        self.recorded.load(Ordering::Acquire) + 1
    }
}

impl Default for HostBackend {
    fn default() -> Self {
        Self::new(HostConfig::default())
    }
}

fn lock(block: &HostBlock) -> std::sync::MutexGuard<'_, Vec<u8>> {
    // A panic while holding the lock cannot leave the bytes in a state worse than a torn copy.
    block.bytes.lock().unwrap_or_else(|e| e.into_inner())
}

fn range(offset: u64, len: u64) -> std::ops::Range<usize> {
    offset as usize..(offset + len) as usize
}

impl Backend for HostBackend {
    type Block = HostBlock;
    type Kernel = ();

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
        Ok(())
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
        if let Some(capacity) = self.config.capacity {
            let prev = self.used.fetch_add(size, Ordering::AcqRel);
            if prev + size > capacity {
                self.used.fetch_sub(size, Ordering::AcqRel);
                return Err(oom(format!(
                    "emulated capacity {capacity} bytes, {prev} bytes in blocks"
                )));
            }
        } else {
            self.used.fetch_add(size, Ordering::AcqRel);
        }
        let mut bytes = Vec::new();
        if let Err(e) = bytes.try_reserve_exact(size as usize) {
            self.used.fetch_sub(size, Ordering::AcqRel);
            return Err(oom(e.to_string()));
        }
        bytes.resize(size as usize, 0);
        Ok(HostBlock {
            bytes: Mutex::new(bytes),
        })
    }

    fn free_block(&self, block: HostBlock) {
        let len = lock(&block).len() as u64;
        self.used.fetch_sub(len, Ordering::AcqRel);
    }

    fn write_host(&self, block: &HostBlock, offset: u64, data: &[u8]) -> Result<()> {
        lock(block)[range(offset, data.len() as u64)].copy_from_slice(data);
        Ok(())
    }

    fn read_host(&self, block: &HostBlock, offset: u64, out: &mut [u8]) -> Result<()> {
        out.copy_from_slice(&lock(block)[range(offset, out.len() as u64)]);
        Ok(())
    }

    fn copy(
        &self,
        src: &HostBlock,
        src_offset: u64,
        dst: &HostBlock,
        dst_offset: u64,
        size: u64,
    ) -> Result<SubmissionIndex> {
        if std::ptr::eq(src, dst) {
            lock(src).copy_within(range(src_offset, size), dst_offset as usize);
        } else {
            let from = lock(src);
            lock(dst)[range(dst_offset, size)].copy_from_slice(&from[range(src_offset, size)]);
        }
        Ok(self.record())
    }

    fn clear(&self, block: &HostBlock, offset: u64, size: u64) -> Result<SubmissionIndex> {
        lock(block)[range(offset, size)].fill(0);
        Ok(self.record())
    }

    fn compile(&self, source: &KernelSource, _constants: Constants<'_>) -> Result<()> {
        Err(Error::Unsupported {
            what: format!("kernel `{}`", source.label),
            reason: "the host backend runs no shaders; use a wgpu context, or the kernel's CPU \
                     reference"
                .into(),
        })
    }

    fn dispatch(
        &self,
        _kernel: &(),
        _bindings: &[BlockRange<'_, HostBlock>],
        _params: &[u8],
        _workgroups: [u32; 3],
    ) -> Result<SubmissionIndex> {
        Err(Error::Unsupported {
            what: "dispatch".into(),
            reason: "the host backend runs no shaders".into(),
        })
    }

    fn submit(&self) -> Result<SubmissionIndex> {
        Ok(self.recorded.fetch_add(1, Ordering::AcqRel) + 1)
    }

    fn is_done(&self, _index: SubmissionIndex) -> Result<bool> {
        Ok(true)
    }

    fn wait(&self, _index: SubmissionIndex) -> Result<()> {
        Ok(())
    }
}
