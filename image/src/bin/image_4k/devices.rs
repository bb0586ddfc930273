//! `--devices`: which devices the frames are spread over, read from the command line before any
//! device is opened, then opened into a [`DeviceSet`] (one context per entry, each with the
//! whole `--budget`).
//!
//! `all` is every device of the backend ([`DeviceSet::wgpu`], [`DeviceSet::cuda`]); a list
//! (`0,1`) names devices by their index in that order. An index given twice (`0,0`) opens two
//! contexts on that one device: two workers on one GPU, and the way to try several devices on
//! a machine with one adapter (lavapipe). Without the flag, the tool opens the one device it
//! always has ([`Context::new`], which honours `WGPU_ADAPTER_NAME` and `WGPU_POWER_PREF`, or
//! CUDA device 0).

use vramkit::backend::wgpu::{WgpuBackend, WgpuConfig};
use vramkit::backend::Backend;
use vramkit::devices::DeviceSet;
use vramkit::{Context, ContextDesc};

use crate::Failure;

/// The most entries a `--devices` list may have.
const MAX_DEVICES: usize = 64;

/// Which devices `--devices` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// No flag: the one device the tool opens by default.
    Default,
    /// `all`: every device of the backend.
    All,
    /// Device indices, in the order given; one may repeat.
    List(Vec<usize>),
}

/// Reads `--devices` (`None`: the flag was not given).
///
/// # Errors
/// A usage error saying what is wrong with the text and how to write it.
pub fn parse(spec: Option<&str>) -> Result<Devices, Failure> {
    let Some(spec) = spec else {
        return Ok(Devices::Default);
    };
    let usage = |what: String| {
        Failure::Usage(format!(
            "--devices `{spec}`: {what}; give `all` or device indices separated by commas, \
             e.g. `--devices 0,1` (`0,0` opens two contexts on device 0)"
        ))
    };
    let spec_t = spec.trim();
    if spec_t.eq_ignore_ascii_case("all") {
        return Ok(Devices::All);
    }
    if spec_t.is_empty() {
        return Err(usage("no device given".into()));
    }
    let mut list = Vec::new();
    for (k, part) in spec_t.split(',').enumerate() {
        let part = part.trim();
        if part.is_empty() {
            return Err(usage(format!("entry {} is empty", k + 1)));
        }
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(usage(format!("`{part}` is not a device index")));
        }
        let index = part
            .parse::<usize>()
            .map_err(|_| usage(format!("`{part}` is too large to be a device index")))?;
        list.push(index);
    }
    if list.len() > MAX_DEVICES {
        return Err(usage(format!(
            "{} entries, more than the {MAX_DEVICES} the tool opens",
            list.len()
        )));
    }
    Ok(Devices::List(list))
}

/// Refuses indices past the `count` devices of `backend`.
fn check_indices(list: &[usize], count: usize, backend: &str) -> Result<(), Failure> {
    match list.iter().find(|&&i| i >= count) {
        Some(i) => Err(Failure::Usage(format!(
            "--devices: device {i} does not exist: this host has {count} {backend} device(s){}; \
             give indices below {count}, or `all`",
            if count > 0 {
                format!(" (indices 0 to {})", count - 1)
            } else {
                String::new()
            }
        ))),
        None => Ok(()),
    }
}

/// How many times each entry's index came before it in `list` (`0,1,0`: 0, 0, 1).
fn repeats(list: &[usize]) -> Vec<usize> {
    list.iter()
        .enumerate()
        .map(|(k, i)| list[..k].iter().filter(|&j| j == i).count())
        .collect()
}

/// A set of contexts `contexts`, as a [`DeviceSet`] without a total budget.
fn set<B: Backend>(contexts: Vec<Context<B>>) -> Result<DeviceSet<B>, Failure> {
    Ok(DeviceSet::from_contexts(contexts, None)?)
}

/// Opens the wgpu devices `wanted` names, each context with `desc`.
///
/// A list opens every adapter ([`WgpuBackend::all`]) once per repeat of its most repeated index
/// and keeps the devices it names: wgpu opens a device per adapter, and a second context on one
/// adapter needs a device of its own.
///
/// # Errors
/// A usage error for an index past the adapters; no GPU when a device fails to open.
pub fn open_wgpu(wanted: &Devices, desc: &ContextDesc) -> Result<DeviceSet<WgpuBackend>, Failure> {
    match wanted {
        Devices::Default => set(vec![Context::new(desc.clone())?]),
        Devices::All => Ok(DeviceSet::wgpu(desc.clone(), None)?),
        Devices::List(list) => {
            let config = WgpuConfig {
                cooperative_matrix: !desc.debug.no_cooperative_matrix,
            };
            let repeat = repeats(list);
            let rounds = repeat.iter().max().map_or(0, |r| r + 1);
            let mut backends: Vec<Option<WgpuBackend>> = list.iter().map(|_| None).collect();
            for round in 0..rounds {
                let mut opened: Vec<Option<WgpuBackend>> =
                    WgpuBackend::all(config)?.into_iter().map(Some).collect();
                check_indices(list, opened.len(), "wgpu")?;
                for (k, &i) in list.iter().enumerate() {
                    if repeat[k] == round {
                        backends[k] = opened[i].take();
                    }
                }
            }
            let contexts = backends
                .into_iter()
                .map(|b| {
                    b.map(|b| Context::with_backend(b, desc.clone()))
                        .ok_or_else(|| {
                            Failure::NoGpu(
                                "a wgpu adapter went away while opening --devices".into(),
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            set(contexts)
        }
    }
}

/// Opens the CUDA devices `wanted` names, each context with `desc`.
///
/// # Errors
/// A usage error for an index past the devices; no GPU when the driver is missing or a device
/// fails to open.
#[cfg(feature = "cuda")]
pub fn open_cuda(
    wanted: &Devices,
    desc: &ContextDesc,
) -> Result<DeviceSet<vramkit::backend::cuda::CudaBackend>, Failure> {
    match wanted {
        Devices::Default => set(vec![Context::cuda(0, desc.clone())?]),
        Devices::All => Ok(DeviceSet::cuda(desc.clone(), None)?),
        Devices::List(list) => {
            let count = vramkit::backend::cuda::CudaBackend::device_count()?;
            check_indices(list, count, "CUDA")?;
            let contexts = list
                .iter()
                .map(|&i| Context::cuda(i, desc.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            set(contexts)
        }
    }
}
