//! Loading the CUDA driver, the device's primary context, and driver errors as [`Error`]s.

use std::ffi::CStr;

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys::{self, CUresult};

use crate::types::error::{Error, Result};

/// The oldest driver whose entry points the bindings (`cuda-13000`) use.
const MIN_DRIVER: i32 = 13000;

/// The primary context of one device, retained. Raw driver handles, so not `Send` by themselves.
pub(super) struct Device {
    pub(super) ordinal: i32,
    pub(super) dev: sys::CUdevice,
    pub(super) ctx: sys::CUcontext,
    pub(super) driver_version: i32,
}

// SAFETY: a CUDA context handle may be made current on, and used from, any thread; the driver
// API is thread-safe. `Device` only hands the handle to driver calls.
unsafe impl Send for Device {}
// SAFETY: as above; no method mutates the handles.
unsafe impl Sync for Device {}

impl Device {
    /// Loads the driver (at run time), starts it and checks its version; returns the version.
    fn start() -> Result<i32> {
        // SAFETY: only tries to dlopen the driver library by its known names.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoAdapter {
                reason: "the CUDA driver (libcuda.so.1) is not installed: install the NVIDIA \
                         driver, or use the wgpu backend"
                    .into(),
            });
        }
        // cudarc panics when the library lacks a symbol: probe the entry points used first.
        let version = std::panic::catch_unwind(|| {
            cu::init()?;
            let mut v = 0;
            // SAFETY: writes one int.
            unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
            Ok::<_, DriverError>(v)
        })
        .map_err(|_| Error::NoAdapter {
            reason: "the CUDA driver library lacks entry points vramkit needs: update the NVIDIA \
                     driver (R580 or newer, CUDA 13)"
                .into(),
        })?
        .map_err(|e| Error::NoAdapter {
            reason: format!("the CUDA driver did not start: {}", describe(e)),
        })?;
        if version < MIN_DRIVER {
            return Err(Error::NoAdapter {
                reason: format!(
                    "the NVIDIA driver supports CUDA {}.{}, vramkit's CUDA backend needs 13.0 or \
                     newer: update the driver (R580+)",
                    version / 1000,
                    version % 1000 / 10
                ),
            });
        }
        Ok(version)
    }

    /// How many CUDA devices there are (those `CUDA_VISIBLE_DEVICES` leaves).
    pub(super) fn count() -> Result<i32> {
        Self::start()?;
        cu::device::get_count().map_err(|e| Error::NoAdapter {
            reason: format!("counting CUDA devices failed: {}", describe(e)),
        })
    }

    /// Loads the driver (at run time) and retains the primary context of device `ordinal`.
    pub(super) fn open(ordinal: i32) -> Result<Self> {
        let version = Self::start()?;
        let count = cu::device::get_count().map_err(|e| Error::NoAdapter {
            reason: format!("counting CUDA devices failed: {}", describe(e)),
        })?;
        if ordinal < 0 || ordinal >= count {
            return Err(Error::NoAdapter {
                reason: format!(
                    "CUDA device {ordinal} does not exist: there are {count} (check \
                     CUDA_VISIBLE_DEVICES)"
                ),
            });
        }
        let dev = cu::device::get(ordinal).map_err(|e| no_adapter("cuDeviceGet", e))?;
        // SAFETY: `dev` is a valid device; the context is released in `Drop`.
        let ctx = unsafe { cu::primary_ctx::retain(dev) }
            .map_err(|e| no_adapter("cuDevicePrimaryCtxRetain", e))?;
        let device = Self {
            ordinal,
            dev,
            ctx,
            driver_version: version,
        };
        device.bind()?;
        Ok(device)
    }

    /// Makes the context current on this thread (a no-op when it already is).
    pub(super) fn bind(&self) -> Result<()> {
        if cu::ctx::get_current().map_err(|e| error("cuCtxGetCurrent", e))? != Some(self.ctx) {
            // SAFETY: the context is retained for the life of `self`.
            unsafe { cu::ctx::set_current(self.ctx) }.map_err(|e| error("cuCtxSetCurrent", e))?;
        }
        Ok(())
    }

    /// A device attribute.
    pub(super) fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32> {
        // SAFETY: `dev` is a valid device.
        unsafe { cu::device::get_attribute(self.dev, attr) }
            .map_err(|e| error("cuDeviceGetAttribute", e))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `open`; nothing uses the context afterwards.
        if let Err(e) = unsafe { cu::primary_ctx::release(self.dev) } {
            log::warn!(
                "vramkit: releasing the CUDA context failed: {}",
                describe(e)
            );
        }
    }
}

fn no_adapter(op: &str, e: DriverError) -> Error {
    Error::NoAdapter {
        reason: format!("{op} failed: {}", describe(e)),
    }
}

/// `CUDA_ERROR_X: description`.
pub(super) fn describe(e: DriverError) -> String {
    let name = e.error_name().map(CStr::to_string_lossy);
    let text = e.error_string().map(CStr::to_string_lossy);
    match (name, text) {
        (Ok(n), Ok(t)) => format!("{n}: {t}"),
        _ => format!("{:?}", e.0),
    }
}

/// Errors after which the context is unusable: CUDA reports them from every later call.
pub(super) fn is_sticky(e: DriverError) -> bool {
    matches!(
        e.0,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
            | CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE
            | CUresult::CUDA_ERROR_DEINITIALIZED
    )
}

/// A driver error as [`Error::Cuda`].
pub(super) fn error(op: &'static str, e: DriverError) -> Error {
    Error::Cuda {
        op,
        code: e.error_name().map_or_else(
            |_| format!("{:?}", e.0),
            |n| n.to_string_lossy().into_owned(),
        ),
        message: e
            .error_string()
            .map_or_else(|_| String::new(), |t| t.to_string_lossy().into_owned()),
    }
}
