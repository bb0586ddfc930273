//! Kernel launches over allocations: bindings, override constants and the pipeline cache.
//!
//! [`Context::dispatch`] and [`Context::dispatch_with`] are safe for any kernel and params:
//! they compile every kernel, vramkit's own included, with runtime bounds checks (WGSL's, and
//! `BUF` in the CUDA twins), so no params can reach past a binding. vramkit's typed kernel
//! functions (the `vramkit-kernels` crate) validate their params against the bound sizes and launch the
//! builds without checks of kernels made [`unchecked`](crate::backend::KernelSource::unchecked)
//! through [`Context::dispatch_unchecked`], whose `# Safety` states what the validation owes.

use std::sync::{Arc, Mutex};

use crate::backend::{Backend, BlockRange, Constants, KernelSource};
use crate::context::{KernelKey, KernelSlot};
use crate::memory::manager::Access;
use crate::signature::Signature;
use crate::types::error::Result;
use crate::types::lock;
use crate::types::QueueIndex;
use crate::SubmissionIndex;
use crate::{BufferHandle, Context};

/// A storage binding: a whole allocation, or a range of one.
///
/// ```
/// # let ctx = vramkit::Context::host(Default::default());
/// # let h = ctx.alloc(vramkit::AllocDesc::new("h", 1024)).unwrap();
/// let whole = vramkit::Binding::from(h);
/// let band = vramkit::Binding::range(h, 256, 512);
/// # let _ = (whole, band);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The allocation.
    pub handle: BufferHandle,
    /// Byte offset into it, a multiple of the device's offset alignment (256 on most GPUs).
    pub offset: u64,
    /// Bytes bound; `None` binds to the allocation's end.
    pub size: Option<u64>,
}

impl Binding {
    /// `size` bytes at `offset` of an allocation.
    pub fn range(handle: BufferHandle, offset: u64, size: u64) -> Self {
        Self {
            handle,
            offset,
            size: Some(size),
        }
    }
}

impl From<BufferHandle> for Binding {
    fn from(handle: BufferHandle) -> Self {
        Self {
            handle,
            offset: 0,
            size: None,
        }
    }
}

/// What `slot` holds, built by `build` when it holds nothing: threads that ask while another
/// builds wait for that build rather than making their own. A build that fails leaves the slot
/// empty, and the next request tries again.
fn built_once<T>(
    slot: &Mutex<Option<Arc<T>>>,
    build: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    let mut built = lock(slot);
    if let Some(k) = built.as_ref() {
        return Ok(Arc::clone(k));
    }
    let k = Arc::new(build()?);
    *built = Some(Arc::clone(&k));
    Ok(k)
}

/// The pipeline cache's key of `source` with `constants`.
fn kernel_key(source: &KernelSource, constants: Constants<'_>) -> KernelKey {
    let (label, entry) = source.cache_names();
    (
        label,
        entry,
        source.is_unchecked(),
        constants.iter().map(|&(n, v)| (n, v.to_bits())).collect(),
    )
}

impl<B: Backend> Context<B> {
    /// Whether the pipeline of `source` with `constants` is built and cached, or being built.
    pub(crate) fn kernel_built(&self, source: &KernelSource, constants: Constants<'_>) -> bool {
        let slot = match lock(&self.kernels).get(&kernel_key(source, constants)) {
            Some((built_from, slot)) if built_from.same_code(source) => Arc::clone(slot),
            _ => return false,
        };
        // A slot another thread holds is being built, or read by a launch that found it built:
        // either way nothing to build here (a launch then waits for that build).
        let built = match slot.try_lock() {
            Ok(k) => k.is_some(),
            Err(std::sync::TryLockError::WouldBlock) => true,
            Err(std::sync::TryLockError::Poisoned(_)) => false,
        };
        built
    }

    pub(crate) fn kernel(
        &self,
        source: &KernelSource,
        constants: Constants<'_>,
    ) -> Result<Arc<(B::Kernel, Signature)>> {
        let key = kernel_key(source, constants);
        // A label names one source at a time: a different source under a cached label (WGSL
        // reloaded at run time) is built again and replaces the old pipeline.
        let slot = {
            let mut kernels = lock(&self.kernels);
            match kernels.get(&key) {
                Some((built_from, slot)) if built_from.same_code(source) => Arc::clone(slot),
                _ => {
                    let slot = KernelSlot::default();
                    kernels.insert(key.clone(), (source.clone(), Arc::clone(&slot)));
                    slot
                }
            }
        };
        let built = built_once(&slot, || {
            let signature = Signature::of(source)?;
            signature.check_workgroup(source, self.backend.limits())?;
            Ok((self.backend.compile(source, constants)?, signature))
        });
        if built.is_err() {
            // A source that does not build leaves no entry behind.
            let mut kernels = lock(&self.kernels);
            if kernels
                .get(&key)
                .is_some_and(|(_, s)| Arc::ptr_eq(s, &slot))
            {
                kernels.remove(&key);
            }
        }
        built
    }

    /// Records a kernel launch over whole allocations: `bindings` become storage buffers `0..n`
    /// of group 0 and `params` (if not empty) a uniform buffer at binding `n`. The pipeline is
    /// built once and cached. Returns the submission the launch belongs to.
    ///
    /// The kernel runs with runtime bounds checks (WGSL's, and `BUF` in the CUDA twins): an index
    /// past a binding is clamped into it, so wrong params give wrong values in that binding,
    /// never a write outside it. The typed kernel functions of `vramkit-kernels`
    /// validate their params and run without the checks. Every loop of a shipped kernel ends
    /// whatever its params (no range wraps; a blur reads at most the weights it is given), but
    /// the work a launch does still follows its params: a resize told its source is 4·10⁹
    /// pixels wide averages that many per output pixel. A kernel of your own is yours to bound.
    ///
    /// # Errors
    /// [`Error::Shader`](crate::Error::Shader) if the kernel does not compile; [`Error::TooLarge`](crate::Error::TooLarge) if a binding passes
    /// the device's binding limit; [`Error::StaleHandle`](crate::Error::StaleHandle); [`Error::Unsupported`](crate::Error::Unsupported) on the host.
    pub fn dispatch(
        &self,
        kernel: &KernelSource,
        bindings: &[BufferHandle],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<SubmissionIndex> {
        let bindings: Vec<Binding> = bindings.iter().map(|&h| h.into()).collect();
        self.dispatch_with(kernel, &[], &bindings, params, workgroups)
    }

    /// [`dispatch`](Self::dispatch) with values for the kernel's `override` constants and
    /// bindings that may be ranges of allocations.
    ///
    /// # Errors
    /// As [`dispatch`](Self::dispatch), and [`Error::InvalidRange`](crate::Error::InvalidRange) for a range past the
    /// allocation's end, an unaligned offset or a size that is not a multiple of 4.
    pub fn dispatch_with(
        &self,
        kernel: &KernelSource,
        constants: Constants<'_>,
        bindings: &[Binding],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<SubmissionIndex> {
        let kernel = &*kernel.as_checked();
        // SAFETY: `as_checked` compiles the kernel with runtime bounds checks, which is all
        // `dispatch_unchecked` asks of a kernel not made `unchecked`.
        unsafe { self.dispatch_unchecked(kernel, constants, bindings, params, workgroups) }
    }

    /// [`dispatch_with`](Self::dispatch_with) without runtime checks for a kernel made
    /// [`unchecked`](KernelSource::unchecked): the launch of a typed kernel function that has
    /// validated its params against the bound sizes. The bindings, params size and grid are
    /// still checked against the entry point and the device, as for every launch; any other
    /// kernel is compiled with its checks, as by `dispatch_with`.
    ///
    /// # Safety
    /// If `kernel` is [`unchecked`](KernelSource::is_unchecked), then with these `params` and
    /// `constants`, for every invocation of the grid `workgroups` (in the WGSL and in the CUDA
    /// twin alike):
    /// 1. Each storage binding is read and written only within the bytes bound (`size`, or to
    ///    the allocation's end), the params struct only within its size, and every cooperative
    ///    load or store covers a tile wholly inside its binding.
    /// 2. Every index of an array, vector or matrix, in any address space (workgroup, private
    ///    and function memory included), is in range.
    /// 3. No integer division or remainder divides by zero or `MIN` by `-1`.
    /// 4. Every loop ends.
    ///
    /// # Errors
    /// As [`dispatch_with`](Self::dispatch_with).
    pub unsafe fn dispatch_unchecked(
        &self,
        kernel: &KernelSource,
        constants: Constants<'_>,
        bindings: &[Binding],
        params: &[u8],
        workgroups: [u32; 3],
    ) -> Result<SubmissionIndex> {
        let k = self.kernel(kernel, constants)?;
        let (k, signature) = (&k.0, &k.1);
        let writes: Vec<bool> = signature.read_only.iter().map(|&r| !r).collect();
        let index = self.with_ranges(bindings, &writes, |ranges| {
            let sizes: Vec<u64> = ranges.iter().map(|r| r.size).collect();
            let blocks: Vec<usize> = ranges
                .iter()
                .map(|r| {
                    let same = |o: &BlockRange<'_, B::Block>| std::ptr::eq(o.block, r.block);
                    ranges.iter().position(same).unwrap_or(0)
                })
                .collect();
            let limits = self.backend.limits();
            signature.check(kernel, &sizes, &blocks, params.len(), workgroups, limits)?;
            // SAFETY: `with_ranges` resolved every range inside its block for binding; for an
            // unchecked kernel the caller promised (this function's `# Safety`) that no
            // invocation reaches past the ranges bound, and any other kernel was compiled with
            // bounds checks; the signature check above matched the bindings, params and grid to
            // the entry point and the device.
            unsafe { self.backend.dispatch(k, ranges, params, workgroups) }
        })?;
        Ok(self.submission(index))
    }

    /// Resolves `bindings` to block ranges (the manager's one check), runs `record` on them,
    /// and marks the allocations as used by the submission it returns; those bound whole where
    /// `writes` says the launch writes are written again (their contents known, see
    /// `memory/manager/lost.rs`), unless the launch binds one whose contents are unknown.
    pub(crate) fn with_ranges(
        &self,
        bindings: &[Binding],
        writes: &[bool],
        record: impl FnOnce(&[BlockRange<'_, B::Block>]) -> Result<QueueIndex>,
    ) -> Result<QueueIndex> {
        let limits = self.backend.limits();
        let mut m = self.manager();
        m.note_refusals(&self.backend);
        let index = {
            let mut ranges = Vec::with_capacity(bindings.len());
            for b in bindings {
                let r = m.resolve(b.handle, b.offset, b.size, Access::Bind, limits)?;
                ranges.push(BlockRange {
                    block: r.block,
                    offset: r.offset,
                    size: r.size,
                });
            }
            record(&ranges)?
        };
        // A writable binding of a whole allocation is taken to be written whole: its contents
        // are known again, unless another binding of the launch holds unknown data, whose mark
        // it then takes on (what it computes may come from that).
        let lost: Vec<_> = bindings.iter().map(|b| m.lost_reason(b.handle)).collect();
        for (i, b) in bindings.iter().enumerate() {
            if !writes.get(i).copied().unwrap_or(false) {
                m.touch_read(b.handle, index);
                continue;
            }
            m.touch(b.handle, index);
            let other = lost
                .iter()
                .enumerate()
                .find_map(|(j, why)| if j == i { None } else { why.clone() });
            match other {
                Some(why) => m.mark_lost(b.handle, &why),
                None if b.offset == 0 && b.size.is_none() => m.rewritten(b.handle),
                None => {}
            }
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::built_once;
    use crate::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    #[test]
    fn threads_asking_for_one_pipeline_share_one_build() {
        let slot = Mutex::new(None);
        let builds = AtomicUsize::new(0);
        let built: Vec<Arc<u32>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        built_once(&slot, || {
                            builds.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(7)
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic").expect("built"))
                .collect()
        });
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert!(built.iter().all(|k| Arc::ptr_eq(k, &built[0]) && **k == 7));
    }

    #[test]
    fn a_failed_build_is_tried_again() {
        let slot = Mutex::new(None);
        let failed = built_once(&slot, || -> crate::Result<u32> {
            Err(Error::Shader {
                label: "k".into(),
                message: "no".into(),
            })
        });
        assert!(failed.is_err());
        assert_eq!(*built_once(&slot, || Ok(3)).expect("built"), 3);
        assert_eq!(*built_once(&slot, || Ok(4)).expect("built"), 3);
    }
}
