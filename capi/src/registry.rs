//! The process's allocators: one [`Device`] per device index, made on first use with the
//! settings of the moment (the environment, then `vramkit_configure`).

use std::sync::{Mutex, OnceLock};

use vramkit::{Error, Result};

use crate::config::Config;
use crate::device::Device;

/// Device indices served (CUDA ordinals; host devices alike).
pub const MAX_DEVICES: usize = 64;

struct Registry {
    config: Mutex<Config>,
    /// Why the environment's settings were refused, reported by every call until configured.
    env_error: Mutex<Option<String>>,
    devices: [OnceLock<Device>; MAX_DEVICES],
    /// Held while a device opens, so that one opens once.
    opening: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let (config, env_error) = match Config::from_env() {
            Ok(c) => (c, None),
            Err(e) => (Config::default(), Some(e)),
        };
        Registry {
            config: Mutex::new(config),
            env_error: Mutex::new(env_error),
            devices: std::array::from_fn(|_| OnceLock::new()),
            opening: Mutex::new(()),
        }
    })
}

fn invalid(name: &'static str, value: String, reason: &'static str) -> Error {
    Error::InvalidParameter {
        name,
        value,
        reason,
    }
}

/// The slot of device `index`.
fn slot(index: i32) -> Result<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < MAX_DEVICES)
        .ok_or_else(|| {
            invalid(
                "device",
                index.to_string(),
                "device indices run from 0 to 63: pass the CUDA device ordinal",
            )
        })
}

/// The device `index`, opened on first use.
///
/// # Errors
/// A bad index; the environment's settings, if they were refused; the device's failure to
/// open (no driver, no such device).
pub fn device(index: i32) -> Result<&'static Device> {
    let r = registry();
    let i = slot(index)?;
    if let Some(d) = r.devices[i].get() {
        return Ok(d);
    }
    if let Some(e) = lock(&r.env_error).clone() {
        return Err(Error::InvalidParameter {
            name: "environment",
            value: e,
            reason: "fix the VRAMKIT_* variable, or call vramkit_configure with valid settings",
        });
    }
    let _one = lock(&r.opening);
    if let Some(d) = r.devices[i].get() {
        return Ok(d);
    }
    let config = lock(&r.config).clone();
    let d = Device::open(i, &config)?;
    log::info!("vramkit-capi: device {i} opened ({:?})", config.backend);
    Ok(r.devices[i].get_or_init(|| d))
}

/// Whether device `index` is open (a bad index is an error); opens nothing.
pub fn is_open(index: i32) -> Result<bool> {
    Ok(registry().devices[slot(index)?].get().is_some())
}

/// Devices opened so far.
pub fn opened() -> impl Iterator<Item = &'static Device> {
    registry().devices.iter().filter_map(OnceLock::get)
}

/// Applies a settings string: to later devices, and its budget and threshold to open ones.
///
/// # Errors
/// A bad string (nothing applied); a backend change after a device opened.
pub fn configure(settings: &str) -> Result<()> {
    let r = registry();
    let _one = lock(&r.opening);
    let mut config = lock(&r.config);
    let mut next = config.clone();
    next.apply(settings).map_err(|e| Error::InvalidParameter {
        name: "settings",
        value: e,
        reason: "see the keys and forms in vramkit.h",
    })?;
    if next.backend != config.backend && opened().next().is_some() {
        return Err(invalid(
            "backend",
            format!("{:?}", next.backend),
            "the backend is chosen before the first allocation: configure it first",
        ));
    }
    for d in opened() {
        d.set_budget(next.budget_of(d.index))?;
        d.set_release_threshold(next.release_threshold)?;
        if next.trace != config.trace && next.trace > 0 {
            d.start_trace(next.trace);
        }
    }
    *config = next;
    *lock(&r.env_error) = None;
    Ok(())
}

/// Sets one device's budget, opened or not.
///
/// # Errors
/// As [`configure`], and a bad index.
pub fn set_budget(index: i32, budget: Option<u64>) -> Result<()> {
    let r = registry();
    let i = usize::try_from(index)
        .ok()
        .filter(|&i| i < MAX_DEVICES)
        .ok_or_else(|| {
            invalid(
                "device",
                index.to_string(),
                "device indices run from 0 to 63",
            )
        })?;
    lock(&r.config).device_budgets.insert(i, budget);
    match r.devices[i].get() {
        Some(d) => d.set_budget(budget),
        None => Ok(()),
    }
}

/// The opened devices, `hint` first (where it is one).
pub fn candidates(hint: i32) -> impl Iterator<Item = &'static Device> {
    let r = registry();
    let first = usize::try_from(hint)
        .ok()
        .and_then(|i| r.devices.get(i))
        .and_then(OnceLock::get);
    first
        .into_iter()
        .chain(opened().filter(move |d| first.is_none_or(|f| !std::ptr::eq(*d, f))))
}
