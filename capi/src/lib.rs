//! vramkit's memory manager as a C ABI (`include/vramkit.h`): the allocator of PyTorch
//! (`torch.cuda.memory.CUDAPluggableAllocator`), CuPy and any CUDA program.
//!
//! One vramkit context per device, on the device's primary context, made on first use with
//! the settings of the moment (environment variables, then [`vramkit_configure`]). Pointers are
//! allocations made with [`Interop::alloc_on`](vramkit::interop::Interop::alloc_on) for the caller's
//! stream: they never move, are reused at once on their stream once freed, and by other
//! streams only after their stream passed the free. Every function is thread-safe, and none
//! unwinds into C: a failure returns `-1` or null and leaves its message for
//! [`vramkit_last_error`].

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::unwrap_used)]

use std::ffi::{c_char, c_double, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use vramkit::backend::ForeignStream;
use vramkit::{Error, Result};

pub mod config;
mod device;
mod last_error;
mod registry;
mod stats;

pub use last_error::CErrorKind;
use last_error::{set, set_error};
pub use stats::VramkitStats;

/// Set once a call panicked: the allocator's state may be half updated, so every later call
/// fails rather than hand out memory from it.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Runs `f` with this thread's last error cleared, turning an error or a panic into the last
/// error and `fail`. After a panic every call fails.
fn guard<T>(fail: T, f: impl FnOnce() -> Result<T>) -> T {
    last_error::clear();
    keeping_last_error(fail, f)
}

/// [`guard`] for calls that read state (statistics, the summary): the last error stays unless
/// `f` fails, so a program can explain a refusal with them and still read its message.
fn keeping_last_error<T>(fail: T, f: impl FnOnce() -> Result<T>) -> T {
    if PANICKED.load(Ordering::Acquire) {
        set(
            CErrorKind::Other,
            "an earlier vramkit call panicked (a vramkit bug; please report it): the \
             allocator's state may be inconsistent, so it serves no more calls"
                .into(),
        );
        return fail;
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_error(&e);
            fail
        }
        Err(_) => {
            PANICKED.store(true, Ordering::Release);
            set(
                CErrorKind::Other,
                "vramkit panicked inside a C call (a vramkit bug): please report it; the \
                 allocator serves no more calls"
                    .into(),
            );
            fail
        }
    }
}

fn status(r: Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_error(&e);
            -1
        }
    }
}

/// The stream behind a `cudaStream_t`.
///
/// # Safety
/// 1. As [`ForeignStream::from_raw`]: the callers' contract.
unsafe fn stream_of(stream: *mut c_void) -> ForeignStream {
    // SAFETY: the caller's contract, passed on.
    unsafe { ForeignStream::from_raw(stream as u64) }
}

/// Copies `text` into `buf` (at most `cap` bytes, NUL-terminated) and returns its length.
///
/// # Safety
/// 1. `buf` is null or points to `cap` writable bytes.
unsafe fn fill(text: &str, buf: *mut c_char, cap: usize) -> usize {
    if !buf.is_null() && cap > 0 {
        let n = text.len().min(cap - 1);
        // SAFETY: `buf` has `cap` writable bytes (the caller's promise) and `n + 1 <= cap`;
        // `text` is a different allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    text.len()
}

/// `size` bytes on `device` for work on `stream` (null: the legacy default stream); null on
/// failure ([`vramkit_last_error`] says why). PyTorch's `CUDAPluggableAllocator` signature.
///
/// # Safety
/// 1. `stream` is a stream of `device`'s primary context (or a default stream), alive until
///    the memory is freed and [`vramkit_forget_stream`] returned for it, or the process ends
///    (vramkit records events on it after the free, when another stream needs the memory).
#[no_mangle]
pub unsafe extern "C" fn vramkit_malloc(
    size: isize,
    device: c_int,
    stream: *mut c_void,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let size = u64::try_from(size).map_err(|_| Error::InvalidParameter {
            name: "size",
            value: size.to_string(),
            reason: "a size is at least 0 bytes",
        })?;
        let d = registry::device(device)?;
        // SAFETY: the caller's contract.
        let s = unsafe { stream_of(stream) };
        Ok(d.malloc(size, s)? as *mut c_void)
    })
}

/// Frees `ptr` (from [`vramkit_malloc`]). A stream other than the allocation's counts as a
/// use on it; an unknown pointer is reported through [`vramkit_last_error`] and ignored.
/// PyTorch's `CUDAPluggableAllocator` signature.
///
/// # Safety
/// 1. `stream` as in [`vramkit_malloc`].
#[no_mangle]
pub unsafe extern "C" fn vramkit_free(
    ptr: *mut c_void,
    _size: isize,
    device: c_int,
    stream: *mut c_void,
) {
    guard((), || {
        if ptr.is_null() {
            return Ok(());
        }
        let p = ptr as u64;
        // SAFETY: the caller's contract.
        let s = unsafe { stream_of(stream) };
        for d in registry::candidates(device) {
            if d.free(p, s)? {
                return Ok(());
            }
        }
        Err(Error::InvalidParameter {
            name: "ptr",
            value: format!("{p:#x}"),
            reason: "vramkit_free got a pointer vramkit_malloc did not hand out, or freed \
                     already: nothing was freed",
        })
    });
}

/// The version of the C ABI (`VRAMKIT_ABI_VERSION` in the header): a program checks it
/// against the header it was built with.
#[no_mangle]
pub extern "C" fn vramkit_abi_version() -> u32 {
    last_error::clear();
    ABI_VERSION
}

/// The C ABI's version; changes whenever a signature or `VramkitStats` does.
pub const ABI_VERSION: u32 = 5;

/// PyTorch's init hook: devices open on first use.
#[no_mangle]
pub extern "C" fn vramkit_init(_device_count: c_int) {
    last_error::clear();
}

/// Waits until the memory freed on `stream` has been confirmed passed on every device, and
/// forgets the stream: afterwards it may be destroyed (once nothing allocated on it is live).
///
/// # Safety
/// 1. `stream` as in [`vramkit_malloc`].
#[no_mangle]
pub unsafe extern "C" fn vramkit_forget_stream(stream: *mut c_void) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's contract.
        let s = unsafe { stream_of(stream) };
        for d in registry::opened() {
            d.forget_stream(s)?;
        }
        Ok(0)
    })
}

/// PyTorch's reset (`empty_cache`) hook: gives back every cached free byte of every device.
#[no_mangle]
pub extern "C" fn vramkit_empty_cache() {
    vramkit_trim(-1);
}

/// PyTorch's memory-fraction hook: the device's budget becomes `fraction` of its memory.
#[no_mangle]
pub extern "C" fn vramkit_set_memory_fraction(fraction: c_double, device: c_int) {
    guard((), || {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(Error::InvalidParameter {
                name: "fraction",
                value: fraction.to_string(),
                reason: "a memory fraction lies in (0, 1]",
            });
        }
        let d = registry::device(device)?;
        let (total, _) = d.memory_info().ok_or_else(|| Error::Unsupported {
            what: "a memory fraction".into(),
            reason: "this device does not tell its memory size: set a budget in bytes".into(),
        })?;
        registry::set_budget(device, Some((total as f64 * fraction) as u64))
    });
}

/// Declares that `ptr`'s memory is also used by work on `stream`.
///
/// # Safety
/// 1. `stream` as in [`vramkit_malloc`].
#[no_mangle]
pub unsafe extern "C" fn vramkit_record_stream(ptr: *mut c_void, stream: *mut c_void) {
    guard((), || {
        let p = ptr as u64;
        // SAFETY: the caller's contract.
        let s = unsafe { stream_of(stream) };
        for d in registry::candidates(-1) {
            if d.record_stream(p, s)? {
                return Ok(());
            }
        }
        Err(Error::InvalidParameter {
            name: "ptr",
            value: format!("{p:#x}"),
            reason: "vramkit_record_stream got a pointer vramkit_malloc did not hand out",
        })
    });
}

/// Applies a settings string (see the header).
///
/// # Safety
/// 1. `settings` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn vramkit_configure(settings: *const c_char) -> c_int {
    guard(-1, || {
        if settings.is_null() {
            return Err(Error::InvalidParameter {
                name: "settings",
                value: "NULL".into(),
                reason: "pass a string such as \"budget=70GiB\"",
            });
        }
        // SAFETY: a NUL-terminated string (the caller's promise).
        let text = unsafe { CStr::from_ptr(settings) }.to_string_lossy();
        Ok(status(registry::configure(&text)))
    })
}

/// Sets one device's budget in bytes (`u64::MAX`: none).
#[no_mangle]
pub extern "C" fn vramkit_set_budget(device: c_int, bytes: u64) -> c_int {
    guard(-1, || {
        Ok(status(registry::set_budget(
            device,
            (bytes != u64::MAX).then_some(bytes),
        )))
    })
}

/// Fills `out` with the device's figures.
///
/// # Safety
/// 1. `out` points to a writable `vramkit_stats`.
#[no_mangle]
pub unsafe extern "C" fn vramkit_get_stats(device: c_int, out: *mut VramkitStats) -> c_int {
    keeping_last_error(-1, || {
        if out.is_null() {
            return Err(Error::InvalidParameter {
                name: "out",
                value: "NULL".into(),
                reason: "pass a vramkit_stats to fill",
            });
        }
        let stats = registry::device(device)?.figures();
        // SAFETY: `out` points to a writable `vramkit_stats` (the caller's promise).
        unsafe { out.write(stats) };
        Ok(0)
    })
}

/// The device's allocator table into `buf` (see the header).
///
/// # Safety
/// 1. `buf` is null or points to `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn vramkit_summary(device: c_int, buf: *mut c_char, cap: usize) -> usize {
    keeping_last_error(0, || {
        let text = registry::device(device)?.summary();
        // SAFETY: the caller's promise, passed on.
        Ok(unsafe { fill(&text, buf, cap) })
    })
}

/// This thread's last error message into `buf`; 0 if none.
///
/// # Safety
/// 1. `buf` is null or points to `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn vramkit_last_error(buf: *mut c_char, cap: usize) -> usize {
    // No `guard`: reading the last error must not clear it.
    let (_, message) = last_error::get();
    // SAFETY: the caller's promise, passed on.
    unsafe { fill(&message, buf, cap) }
}

/// The kind of this thread's last error (`enum vramkit_error_kind`).
#[no_mangle]
pub extern "C" fn vramkit_last_error_kind() -> c_int {
    last_error::get().0 as c_int
}

/// Gives back every cached free byte of the device (-1: of every device opened).
#[no_mangle]
pub extern "C" fn vramkit_trim(device: c_int) -> c_int {
    guard(-1, || {
        if device < 0 {
            for d in registry::opened() {
                d.trim()?;
            }
        } else {
            registry::device(device)?.trim()?;
        }
        Ok(0)
    })
}

/// 1 if the device is open (an allocation, a figure or a setting reached it), 0 if not; -1
/// for a bad index. Opens nothing: figures of a device the program never used, which
/// `vramkit_get_stats` would open (a context on it), can be skipped.
#[no_mangle]
pub extern "C" fn vramkit_device_open(device: c_int) -> c_int {
    keeping_last_error(-1, || Ok(c_int::from(registry::is_open(device)?)))
}

/// Sets every peak of the device's figures (`peak_*` of `vramkit_stats`) to the figure it
/// follows now (-1: of every device opened), as `torch.cuda.reset_peak_memory_stats` does.
#[no_mangle]
pub extern "C" fn vramkit_reset_peaks(device: c_int) -> c_int {
    guard(-1, || {
        if device < 0 {
            registry::opened().for_each(|d| d.reset_peaks());
        } else {
            registry::device(device)?.reset_peaks();
        }
        Ok(0)
    })
}

/// Starts recording the device's timeline, `capacity` events at most.
#[no_mangle]
pub extern "C" fn vramkit_trace_start(device: c_int, capacity: usize) -> c_int {
    guard(-1, || {
        registry::device(device)?.start_trace(capacity.max(1));
        Ok(0)
    })
}

/// Writes the device's timeline as Chrome trace JSON to `path`.
///
/// # Safety
/// 1. `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn vramkit_trace_save(device: c_int, path: *const c_char) -> c_int {
    guard(-1, || {
        if path.is_null() {
            return Err(Error::InvalidParameter {
                name: "path",
                value: "NULL".into(),
                reason: "pass the file to write",
            });
        }
        // SAFETY: a NUL-terminated string (the caller's promise).
        let path = unsafe { CStr::from_ptr(path) }
            .to_string_lossy()
            .into_owned();
        let json = registry::device(device)?.trace_json()?;
        std::fs::write(&path, json).map_err(|source| Error::Io {
            what: format!("writing the timeline to {path}"),
            source,
        })?;
        Ok(0)
    })
}

/// A host device's stream: a number of the host backend's model.
fn host_stream(stream: *mut c_void) -> ForeignStream {
    // SAFETY: only host devices take it (`host_only`), whose streams are numbers of a model.
    unsafe { ForeignStream::from_raw(stream as u64) }
}

/// Host backend only (tests): stream `stream` of `device` "runs work" until resumed; memory it
/// released meanwhile is not handed to other streams before it passes.
#[no_mangle]
pub extern "C" fn vramkit_host_hold_stream(device: c_int, stream: *mut c_void) -> c_int {
    guard(-1, || {
        registry::device(device)?
            .host_only()?
            .hold_stream(host_stream(stream));
        Ok(0)
    })
}

/// Host backend only (tests): the held stream's work finishes.
#[no_mangle]
pub extern "C" fn vramkit_host_resume_stream(device: c_int, stream: *mut c_void) -> c_int {
    guard(-1, || {
        registry::device(device)?
            .host_only()?
            .resume_stream(host_stream(stream));
        Ok(0)
    })
}

/// Host backend only (tests): 1 while the stream is held, 0 once it passed, -1 on error.
#[no_mangle]
pub extern "C" fn vramkit_host_stream_held(device: c_int, stream: *mut c_void) -> c_int {
    guard(-1, || {
        Ok(c_int::from(
            registry::device(device)?
                .host_only()?
                .is_held(host_stream(stream)),
        ))
    })
}
