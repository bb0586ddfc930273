//! The statistics of a [`DeviceSet`](super::DeviceSet): each device's, and their sums.

use crate::memory::MemoryStats;

/// Each device's [`MemoryStats`] and the set's sums ([`DeviceSet::stats`](super::DeviceSet::stats)).
/// Peaks are per device only: the devices reach theirs at different times.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SetStats {
    /// Each device's statistics, in device order.
    pub per_device: Vec<MemoryStats>,
    /// The set's total budget, if any.
    pub total_budget: Option<u64>,
    /// Bytes asked for in live allocations, summed.
    pub requested: u64,
    /// Bytes handed out in live allocations (with alignment padding), summed.
    pub in_use: u64,
    /// Bytes held from the devices (blocks and staging), summed: what the total budget bounds.
    pub reserved: u64,
    /// Bytes in staging buffers, summed.
    pub staging: u64,
    /// Live allocations, summed.
    pub live: usize,
}

impl SetStats {
    pub(super) fn new(per_device: Vec<MemoryStats>, total_budget: Option<u64>) -> Self {
        let sum =
            |f: fn(&MemoryStats) -> u64| per_device.iter().map(f).fold(0u64, u64::saturating_add);
        Self {
            requested: sum(|s| s.requested),
            in_use: sum(|s| s.in_use),
            reserved: sum(|s| s.reserved),
            staging: sum(|s| s.staging),
            live: per_device.iter().map(|s| s.live).sum(),
            total_budget,
            per_device,
        }
    }
}

impl std::fmt::Display for SetStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        write!(
            f,
            "{} devices: {:.1} MiB in use, {:.1} MiB reserved",
            self.per_device.len(),
            mib(self.in_use),
            mib(self.reserved)
        )?;
        if let Some(t) = self.total_budget {
            write!(f, " of a {:.1} MiB total budget", mib(t))?;
        }
        for (i, s) in self.per_device.iter().enumerate() {
            write!(
                f,
                "\n  device {i}: {:.1} MiB in use, {:.1} MiB reserved",
                mib(s.in_use),
                mib(s.reserved)
            )?;
            if let Some(b) = s.budget {
                write!(f, " of {:.1} MiB", mib(b))?;
            }
        }
        Ok(())
    }
}
