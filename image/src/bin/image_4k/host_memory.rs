//! How many frames the host's memory holds at once: each worker keeps a decoded frame, its
//! copies for upload and download, and the encoded output, so on a machine with many cores
//! and little memory the cores do not set the count alone.

use vramkit_image::{Op, Pipeline};

/// How many frames of `size` pixels, `bits` a sample, going through `chain`, the host's memory
/// holds at once (no limit where the system does not say).
pub fn frames_held(chain: &[Op], size: [u32; 2], bits: u32) -> usize {
    available().map_or(usize::MAX, |available| {
        let pixels = |[w, h]: [u32; 2]| u64::from(w) * u64::from(h);
        let out = Pipeline::new(chain.to_vec(), size).map_or(0, |p| pixels(p.output_size()));
        frames_fitting(available, per_frame(pixels(size), bits, out))
    })
}

/// Bytes of host memory one frame of `input` pixels, `bits` a sample, going to `output`
/// pixels takes at most at once: the decoded RGBA samples, an RGBA copy of the same depth
/// (orientation, colour conversion), the RGBA32F result read back and its encoding (as large
/// as the result at worst).
pub fn per_frame(input: u64, bits: u32, output: u64) -> u64 {
    let sample = u64::from(bits.div_ceil(8));
    let decoded = input.saturating_mul(4 * sample);
    let result = output.saturating_mul(16);
    decoded
        .saturating_mul(2)
        .saturating_add(result.saturating_mul(2))
}

/// How many frames of `per_frame` bytes fit half of `available` bytes (the rest is left to
/// the system and other programs), at least one.
pub fn frames_fitting(available: u64, per_frame: u64) -> usize {
    usize::try_from(available / 2 / per_frame.max(1))
        .unwrap_or(usize::MAX)
        .max(1)
}

/// The memory the system says programs can still take (`MemAvailable` of `/proc/meminfo`);
/// `None` where it does not say.
pub fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text)
}

fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_counts_its_samples_and_result() {
        // A 4K JPEG to a 4K RGBA32F result: 2 × 33 MB decoded, 2 × 133 MB read back.
        let px = 3840 * 2160;
        assert_eq!(per_frame(px, 8, px), 2 * px * 4 + 2 * px * 16);
        assert_eq!(per_frame(px, 16, 0), 2 * px * 8);
    }

    #[test]
    fn frames_fit_half_the_memory_and_at_least_one() {
        assert_eq!(frames_fitting(16 << 30, 1 << 30), 8);
        assert_eq!(frames_fitting(1 << 30, 4 << 30), 1);
        assert_eq!(frames_fitting(0, 0), 1);
    }

    #[test]
    fn meminfo_gives_available_bytes() {
        let text = "MemTotal:       24570000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(parse_meminfo(text), Some(20_000_000 * 1024));
        assert_eq!(parse_meminfo("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_meminfo("MemAvailable: lots kB\n"), None);
    }
}
