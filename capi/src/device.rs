//! One device's allocator: a vramkit context (CUDA, or host memory for tests), the pointers it
//! handed out, and the time spent inside `vramkit_malloc` and `vramkit_free`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use vramkit::backend::cuda::{CudaBackend, CudaConfig};
use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::{ForeignStream, Storage};
use vramkit::memory::CompactionDesc;
use vramkit::observe::MemoryStats;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error, Result};

use crate::config::{BackendChoice, Config};

/// What a null device's segment can grow to, at least (`host_reserve` when larger).
const NULL_RESERVE: u64 = 1 << 40;

/// A context of either backend.
pub enum AnyContext {
    /// CUDA device memory.
    Cuda(Box<Context<CudaBackend>>),
    /// Host memory.
    Host(Box<Context<HostBackend>>),
}

/// Runs `$body` with `$c` bound to the context, whatever its backend.
macro_rules! with_ctx {
    ($any:expr, $c:ident => $body:expr) => {
        match $any {
            AnyContext::Cuda($c) => $body,
            AnyContext::Host($c) => $body,
        }
    };
}

/// Time and calls inside one entry point.
#[derive(Default)]
pub struct Timer {
    pub calls: AtomicU64,
    pub nanos: AtomicU64,
}

impl Timer {
    fn add(&self, since: Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(ns, Ordering::Relaxed);
    }
}

/// A live pointer's allocation.
#[derive(Clone, Copy)]
struct Live {
    handle: BufferHandle,
    stream: ForeignStream,
}

/// Hashes a pointer for the map of live pointers: two multiplies, where the standard SipHash
/// (built against keys an attacker chooses, which pointers the allocator handed out are not)
/// costs some 40 instructions of every `vramkit_malloc` and `vramkit_free`.
#[derive(Default)]
pub struct PointerHasher(u64);

impl Hasher for PointerHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is reached (the keys are `u64`); any other input still hashes.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // SplitMix64's finalizer (two multiplies, three shifts): every bit of the address
        // reaches both the low bits, where the table takes its bucket, and the top 7, where
        // it takes its control byte, whether addresses differ in their low bits (a segment's
        // allocations) or only in their high ones (segments' bases).
        let mut z = self.0 ^ n;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        self.0 = z ^ (z >> 31);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Live pointers and their allocations.
type Pointers = HashMap<u64, Live, BuildHasherDefault<PointerHasher>>;

/// One device's allocator.
pub struct Device {
    pub index: usize,
    pub ctx: AnyContext,
    /// Live pointers.
    ptrs: Mutex<Pointers>,
    pub malloc: Timer,
    pub free: Timer,
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Device {
    /// Opens device `index` as `config` says: one context on the device's primary context.
    pub fn open(index: usize, config: &Config) -> Result<Self> {
        let desc = ContextDesc {
            budget: config.budget_of(index),
            release_threshold: config.release_threshold,
            // Pointers handed out never move: compaction could only cost time, and free pages
            // go back instead.
            compaction: CompactionDesc {
                before_growth: false,
                slack_permille: config.slack_permille,
                ..Default::default()
            },
            follow_live: config.follow_live,
            ..Default::default()
        };
        let ctx = match config.backend {
            BackendChoice::Cuda => {
                let cuda = CudaConfig {
                    page_size: config.page_size,
                    page_growth: config.page_growth,
                    background_unmap: config.background_unmap,
                    ..Default::default()
                };
                let backend = CudaBackend::with_config(index, cuda)?;
                AnyContext::Cuda(Box::new(Context::with_backend(backend, desc)))
            }
            BackendChoice::Host | BackendChoice::Null => {
                // Segments in reserved address space, as on CUDA: they keep their addresses.
                let defaults = HostConfig::default();
                let host = HostBackend::new(HostConfig {
                    keep_bytes: config.backend == BackendChoice::Host,
                    // A null segment takes addresses only: 1 TiB of them unless more is set,
                    // so that any trace's peak fits one segment, as on a GPU.
                    reserve: Some(match config.backend {
                        BackendChoice::Null => config.host_reserve.max(NULL_RESERVE),
                        _ => config.host_reserve,
                    }),
                    page_size: match config.page_size {
                        0 => defaults.page_size,
                        p => p.next_multiple_of(defaults.page_size),
                    },
                    page_growth: config.page_growth,
                    ..defaults
                });
                AnyContext::Host(Box::new(Context::with_backend(host, desc)))
            }
        };
        if config.trace > 0 {
            with_ctx!(&ctx, c => c.observe().start_trace(config.trace));
        }
        Ok(Self {
            index,
            ctx,
            ptrs: Mutex::new(Pointers::default()),
            malloc: Timer::default(),
            free: Timer::default(),
        })
    }

    /// `size` bytes for work on `stream`; their address.
    pub fn malloc(&self, size: u64, stream: ForeignStream) -> Result<u64> {
        let start = Instant::now();
        // Size 0 still gets a unique pointer: PyTorch keys its records by pointer.
        let desc = AllocDesc::new("malloc", size.max(1)).uninit();
        let r = with_ctx!(&self.ctx, c => c.interop().alloc_on(desc, stream));
        let out = r.map(|(handle, p)| {
            lock(&self.ptrs).insert(p.address, Live { handle, stream });
            p.address
        });
        self.malloc.add(start);
        out
    }

    /// Frees a pointer of this device, if it is one; `stream`, if not the allocation's, used it
    /// too. `Ok(false)` for a pointer this device did not hand out.
    pub fn free(&self, ptr: u64, stream: ForeignStream) -> Result<bool> {
        let start = Instant::now();
        let Some(live) = lock(&self.ptrs).remove(&ptr) else {
            return Ok(false);
        };
        let h = live.handle;
        let r = with_ctx!(&self.ctx, c => {
            if stream == live.stream {
                c.release(h)
            } else {
                c.interop().record_stream(h, stream).and_then(|()| c.release(h))
            }
        });
        self.free.add(start);
        r.map(|()| true)
    }

    /// Confirms the releases on `stream` and forgets it.
    pub fn forget_stream(&self, stream: ForeignStream) -> Result<()> {
        with_ctx!(&self.ctx, c => c.interop().forget_stream(stream))
    }

    /// Declares that `stream` uses the allocation at `ptr` too. `Ok(false)` for a pointer this
    /// device did not hand out.
    pub fn record_stream(&self, ptr: u64, stream: ForeignStream) -> Result<bool> {
        let Some(live) = lock(&self.ptrs).get(&ptr).copied() else {
            return Ok(false);
        };
        with_ctx!(&self.ctx, c => c.interop().record_stream(live.handle, stream)).map(|()| true)
    }

    /// The context's statistics.
    pub fn stats(&self) -> MemoryStats {
        with_ctx!(&self.ctx, c => c.stats())
    }

    /// Total and free device memory, where the driver tells.
    pub fn memory_info(&self) -> Option<(u64, u64)> {
        with_ctx!(&self.ctx, c => c.backend().memory_info()).map(|m| (m.total, m.free))
    }

    /// Sets every peak to the figure it follows now.
    pub fn reset_peaks(&self) {
        with_ctx!(&self.ctx, c => c.observe().reset_peaks());
    }

    /// The summary table.
    pub fn summary(&self) -> String {
        with_ctx!(&self.ctx, c => c.observe().summary())
    }

    /// Gives back every cached free byte.
    pub fn trim(&self) -> Result<u64> {
        with_ctx!(&self.ctx, c => c.memory().trim())
    }

    pub fn set_budget(&self, budget: Option<u64>) -> Result<()> {
        with_ctx!(&self.ctx, c => c.memory().set_budget(budget))
    }

    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        with_ctx!(&self.ctx, c => c.memory().set_release_threshold(bytes))
    }

    pub fn start_trace(&self, capacity: usize) {
        with_ctx!(&self.ctx, c => c.observe().start_trace(capacity));
    }

    /// The timeline as Chrome trace JSON.
    pub fn trace_json(&self) -> Result<String> {
        let trace = with_ctx!(&self.ctx, c => c.observe().trace());
        trace
            .map(|t| t.to_chrome_json())
            .ok_or_else(|| Error::InvalidParameter {
                name: "device",
                value: self.index.to_string(),
                reason: "no timeline is being recorded on this device: call vramkit_trace_start \
                         (or set VRAMKIT_TRACE) first",
            })
    }

    /// The host backend, on a host device.
    pub fn host_only(&self) -> Result<&HostBackend> {
        match &self.ctx {
            AnyContext::Host(c) => Ok(c.backend()),
            AnyContext::Cuda(_) => Err(Error::Unsupported {
                what: "holding a stream".into(),
                reason: "streams are held only on the host backend (backend=host), a model \
                         for tests"
                    .into(),
            }),
        }
    }

    /// The figures of the C header's `vramkit_stats`.
    pub fn figures(&self) -> crate::VramkitStats {
        let s = self.stats();
        let (total, free) = self.memory_info().unwrap_or((0, 0));
        let device = s.kinds[vramkit::MemoryKind::Device.index()].clone();
        crate::VramkitStats {
            requested: s.requested,
            in_use: s.in_use,
            reserved: s.reserved,
            peak_requested: s.peak_requested,
            peak_in_use: s.peak_in_use,
            peak_reserved: s.peak_reserved,
            live: s.live as u64,
            allocations: s.allocations,
            releases: s.releases,
            refusals: s.over_budget_errors + s.out_of_memory_errors,
            budget: s.budget.unwrap_or(u64::MAX),
            free_in_holes: s.cached_free,
            largest_free: device.largest_free,
            pending_release: s.pending_release,
            malloc_calls: self.malloc.calls.load(Ordering::Relaxed),
            malloc_ns: self.malloc.nanos.load(Ordering::Relaxed),
            free_calls: self.free.calls.load(Ordering::Relaxed),
            free_ns: self.free.nanos.load(Ordering::Relaxed),
            device_free: free,
            device_total: total,
            page_unmaps: s.pages.unmaps,
            unmapped_bytes: s.pages.unmapped_bytes,
            page_maps: s.pages.maps,
            mapped_bytes: s.pages.mapped_bytes,
            page_moves: s.pages.moves,
            moved_bytes: s.pages.moved_bytes,
            grow_ns: nanos(s.driver.grow),
            page_ns: nanos(s.driver.map),
            give_back_ns: nanos(s.driver.give_back),
            stream_wait_ns: nanos(s.driver.stream_wait),
            pages: s.pages.pages,
            page_wait_ns: nanos(s.driver.page_wait),
            peak_live: s.peak_live as u64,
            bytes_allocated: s.bytes_allocated,
            bytes_freed: s.bytes_released,
            segments: device.blocks as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses 512 bytes apart (a segment's small allocations), 2 MiB apart (pages) and
    /// 1 TiB apart (segments' bases) spread over the low bits a table takes its buckets from
    /// about as a random hash would (4,096 keys in 4,096 buckets fill about 2,590), and over
    /// the top 7 bits of its control bytes.
    #[test]
    fn pointer_hashes_spread_over_buckets_and_control_bytes() {
        let hash = |p: u64| {
            let mut h = PointerHasher::default();
            h.write_u64(p);
            h.finish()
        };
        let base = 0x7f00_0000_0000u64;
        for stride in [512u64, 2 << 20, 1 << 40] {
            let pointers: Vec<u64> = (0..4096).map(|i| base.wrapping_add(i * stride)).collect();
            let buckets: std::collections::HashSet<u64> =
                pointers.iter().map(|&p| hash(p) & 4095).collect();
            assert!(
                buckets.len() > 2400,
                "stride {stride}: {} buckets",
                buckets.len()
            );
            let tops: std::collections::HashSet<u64> =
                pointers.iter().map(|&p| hash(p) >> 57).collect();
            assert_eq!(
                tops.len(),
                128,
                "stride {stride}: every control byte in use"
            );
        }
    }
}
