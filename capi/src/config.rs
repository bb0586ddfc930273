//! Settings: from the environment (read once, at the first call) and from
//! `vramkit_configure` strings, with the same keys.

use std::collections::BTreeMap;

/// Which memory the allocator hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA device memory.
    Cuda,
    /// Host memory with the same allocator: for tests without a GPU.
    Host,
    /// The host backend with no memory behind the pointers (they must not be dereferenced):
    /// the allocator's own time alone, for measurements.
    Null,
}

/// The allocator's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The budget of every device without one of its own (`None`: no limit).
    pub budget: Option<u64>,
    /// Budgets of single devices.
    pub device_budgets: BTreeMap<usize, Option<u64>>,
    /// Cached free bytes kept (`u64::MAX`: all).
    pub release_threshold: u64,
    /// Which memory.
    pub backend: BackendChoice,
    /// Timeline capacity in events (0: off).
    pub trace: usize,
    /// Give back free pages as the live set shrinks (`ContextDesc::follow_live`).
    pub follow_live: bool,
    /// Address space a host device's segment reserves (what it can grow to).
    pub host_reserve: u64,
    /// How far, in thousandths, the memory held may pass the most ever in use
    /// (`CompactionDesc::slack_permille`).
    pub slack_permille: u32,
    /// The size of a segment's pages, the unit in which physical memory is mapped, given
    /// back and moved (`CudaConfig::page_size`; 0: the device's granularity, 2 MiB): the
    /// smallest, with `page_growth`.
    pub page_size: u64,
    /// Pages that grow with their offset in a segment (`CudaConfig::page_growth`).
    pub page_growth: bool,
    /// Pages given back and the old places of pages moved unmapped by a thread of the CUDA
    /// backend (`CudaConfig::background_unmap`).
    pub background_unmap: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            budget: None,
            device_budgets: BTreeMap::new(),
            release_threshold: u64::MAX,
            backend: BackendChoice::Cuda,
            trace: 0,
            follow_live: true,
            host_reserve: 4 << 30,
            slack_permille: 19,
            page_size: 0,
            page_growth: true,
            background_unmap: true,
        }
    }
}

/// The keys, as settings strings and (upper case, `VRAMKIT_` first) environment variables.
pub const KEYS: [&str; 10] = [
    "budget",
    "release_threshold",
    "backend",
    "trace",
    "follow_live",
    "host_reserve",
    "slack",
    "page_size",
    "page_growth",
    "background_unmap",
];

impl Config {
    /// The settings the environment gives.
    ///
    /// # Errors
    /// The first variable with a bad value, named.
    pub fn from_env() -> Result<Self, String> {
        let mut c = Self::default();
        for key in KEYS {
            let var = format!("VRAMKIT_{}", key.to_uppercase());
            if let Ok(v) = std::env::var(&var) {
                c.set(key, &v).map_err(|e| format!("{var}: {e}"))?;
            }
        }
        Ok(c)
    }

    /// Applies a settings string, all of it or (on an error) none: `key=value` pairs separated
    /// by `,` or `;`, except inside a budget's per-device list, whose items contain `:`
    /// (`budget=0:70GiB,1:60GiB`).
    ///
    /// # Errors
    /// The first bad pair, with what is accepted.
    pub fn apply(&mut self, settings: &str) -> Result<(), String> {
        let mut key: Option<String> = None;
        let mut value = String::new();
        let mut pairs = Vec::new();
        for part in settings.split([',', ';']).map(str::trim) {
            if part.is_empty() {
                continue;
            }
            match part.split_once('=') {
                Some((k, v)) => {
                    if let Some(k) = key.take() {
                        pairs.push((k, std::mem::take(&mut value)));
                    }
                    key = Some(k.trim().to_lowercase());
                    value = v.trim().to_string();
                }
                // A per-device budget's next item.
                None if key.as_deref() == Some("budget") && part.contains(':') => {
                    value.push(',');
                    value.push_str(part);
                }
                None => {
                    return Err(format!(
                        "`{part}` is not a key=value pair; write e.g. \"budget=70GiB, \
                         release_threshold=1GiB\""
                    ))
                }
            }
        }
        if let Some(k) = key {
            pairs.push((k, value));
        }
        // All or nothing.
        let mut next = self.clone();
        for (k, v) in pairs {
            next.set(&k, &v)?;
        }
        *self = next;
        Ok(())
    }

    /// Sets one key.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "budget" => self.set_budget(value),
            "release_threshold" => {
                self.release_threshold = match value.to_lowercase().as_str() {
                    "all" | "none" | "max" => u64::MAX,
                    _ => parse_size(value)?,
                };
                Ok(())
            }
            "backend" => {
                self.backend = match value.to_lowercase().as_str() {
                    "cuda" => BackendChoice::Cuda,
                    "host" => BackendChoice::Host,
                    "null" => BackendChoice::Null,
                    _ => return Err(format!("backend `{value}`: use cuda, host or null")),
                };
                Ok(())
            }
            "host_reserve" => {
                self.host_reserve = parse_size(value)?;
                Ok(())
            }
            "follow_live" => {
                self.follow_live = parse_switch(key, value)?;
                Ok(())
            }
            "page_growth" => {
                self.page_growth = parse_switch(key, value)?;
                Ok(())
            }
            "background_unmap" => {
                self.background_unmap = parse_switch(key, value)?;
                Ok(())
            }
            "slack" => {
                self.slack_permille = parse_slack(value)?;
                Ok(())
            }
            "page_size" => {
                self.page_size = parse_page(value)?;
                Ok(())
            }
            "trace" => {
                self.trace = value.parse().map_err(|_| {
                    format!("trace `{value}`: give the timeline's capacity in events, e.g. 100000")
                })?;
                Ok(())
            }
            _ => Err(format!(
                "unknown setting `{key}`; the settings are {}",
                KEYS.join(", ")
            )),
        }
    }

    /// `70GiB`, `none`, or per device `0:70GiB,1:none`.
    fn set_budget(&mut self, value: &str) -> Result<(), String> {
        if !value.contains(':') {
            self.budget = parse_budget(value)?;
            return Ok(());
        }
        for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (dev, v) = item
                .split_once(':')
                .ok_or_else(|| format!("budget item `{item}`: write device:size, e.g. 0:70GiB"))?;
            let dev: usize = dev
                .trim()
                .parse()
                .map_err(|_| format!("budget item `{item}`: `{dev}` is not a device number"))?;
            self.device_budgets.insert(dev, parse_budget(v)?);
        }
        Ok(())
    }

    /// The budget of device `d`.
    pub fn budget_of(&self, d: usize) -> Option<u64> {
        self.device_budgets.get(&d).copied().unwrap_or(self.budget)
    }
}

/// A share of the peak in use: `2%` or `0.02`, at most 100 %.
fn parse_slack(v: &str) -> Result<u32, String> {
    let t = v.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 10.0),
        None => (t, 1000.0),
    };
    match num.parse::<f64>() {
        Ok(x) if (0.0..=1000.0).contains(&(x * scale)) => Ok((x * scale).round() as u32),
        _ => Err(format!(
            "slack `{v}`: give how far the memory held may pass the most ever in use, \
             from 0 to 100 %, e.g. 2% or 0.02"
        )),
    }
}

/// `on` or `off` (also 1 / 0, true / false, yes / no).
fn parse_switch(key: &str, value: &str) -> Result<bool, String> {
    match value.to_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(format!("{key} `{value}`: use on or off")),
    }
}

/// A page size: `default` (the device's granularity) or a size of at most 1 GiB.
fn parse_page(v: &str) -> Result<u64, String> {
    if v.trim().eq_ignore_ascii_case("default") {
        return Ok(0);
    }
    match parse_size(v) {
        Ok(n) if n <= 1 << 30 => Ok(n),
        _ => Err(format!(
            "page_size `{v}`: give the size of a segment's pages, up to 1GiB, e.g. 4MiB \
             (rounded up to the device's granularity), or default"
        )),
    }
}

fn parse_budget(v: &str) -> Result<Option<u64>, String> {
    match v.trim().to_lowercase().as_str() {
        "none" | "" => Ok(None),
        _ => parse_size(v).map(Some),
    }
}

/// A byte count with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB,
/// TB (powers of 1000); fractions allowed (`1.5GiB`).
///
/// # Errors
/// What was wrong and the accepted form.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad =
        || format!("size `{text}`: write a number with a unit, e.g. 70GiB, 512MiB or 1000000");
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale: f64 = match unit.trim().to_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "tib" | "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(bad()),
    };
    let bytes = n * scale;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails at the error it expects")]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_both_unit_families() {
        assert_eq!(parse_size("70GiB"), Ok(70 << 30));
        assert_eq!(parse_size("1.5 GiB"), Ok(3 << 29));
        assert_eq!(parse_size("512mib"), Ok(512 << 20));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1GiB").is_err());
        assert!(parse_size("1 parsec").is_err());
    }

    #[test]
    fn settings_strings_set_every_key() {
        let mut c = Config::default();
        c.apply(
            "budget=0:70GiB,1:none; release_threshold=1GiB, backend=host, trace=1000, \
             follow_live=off, slack=1.5%, page_size=8MiB, page_growth=off, background_unmap=off",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.follow_live);
        assert!(!c.page_growth);
        assert!(!c.background_unmap);
        assert_eq!(c.slack_permille, 15);
        assert_eq!(c.page_size, 8 << 20);
        c.apply("page_size=default")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.page_size, 0);
        c.apply("slack=0.02").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.slack_permille, 20);
        assert_eq!(c.budget_of(0), Some(70 << 30));
        assert_eq!(c.budget_of(1), None);
        assert_eq!(c.budget_of(2), None);
        assert_eq!(c.release_threshold, 1 << 30);
        assert_eq!(c.backend, BackendChoice::Host);
        assert_eq!(c.trace, 1000);
        c.apply("budget=8GiB").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.budget_of(2), Some(8 << 30));
        assert_eq!(
            c.budget_of(0),
            Some(70 << 30),
            "a device's own budget stays"
        );
    }

    #[test]
    fn bad_settings_say_what_is_accepted() {
        let mut c = Config::default();
        let e = c.apply("colour=blue").unwrap_err();
        assert!(
            e.contains("budget, release_threshold, backend, trace"),
            "{e}"
        );
        assert!(c
            .apply("backend=metal")
            .unwrap_err()
            .contains("cuda, host or null"));
        assert!(c.apply("budget").is_err());
        assert!(c
            .apply("budget=x:1GiB")
            .unwrap_err()
            .contains("device number"));
        assert!(c.apply("trace=5, backend=metal").is_err());
        assert!(c
            .apply("page_growth=maybe")
            .unwrap_err()
            .contains("page_growth `maybe`: use on or off"));
        for bad in ["slack=-1%", "slack=200%", "slack=NaN", "slack=lots"] {
            assert!(c.apply(bad).unwrap_err().contains("0 to 100 %"), "{bad}");
        }
        for bad in ["page_size=2GiB", "page_size=big", "page_size=-2MiB"] {
            assert!(c.apply(bad).unwrap_err().contains("up to 1GiB"), "{bad}");
        }
        assert_eq!(c, Config::default(), "a refused string changes nothing");
    }
}
