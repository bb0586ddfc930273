//! NVRTC's output kept on disk between processes: a kernel built once is loaded from its PTX
//! the next time, without NVRTC (and without loading NVRTC at all where every kernel a process
//! builds is there). The driver's own cache then keeps the PTX's translation to machine code.
//!
//! The directory is `$VRAMKIT_KERNEL_CACHE` when set to a path, else
//! `$XDG_CACHE_HOME/vramkit/kernels`, else `$HOME/.cache/vramkit/kernels`;
//! `VRAMKIT_KERNEL_CACHE=off` (or `0`, `false`, `no`, `none`) turns the cache off. An entry is
//! named by a hash of the CUDA source, NVRTC's options (defines, architecture), the driver's
//! version and vramkit's; not of NVRTC's version, which would need NVRTC loaded for every hit:
//! after upgrading NVRTC alone, empty the folder to have kernels compiled by the new one. A
//! file that cannot be read, or that lacks its header and end line (a write cut short), is a
//! miss; a write that fails is logged at debug level and the kernel is used all the same.
//! Nothing is evicted: an entry is a few KiB to a few hundred KiB, one per kernel, variant and
//! driver.

use std::path::{Path, PathBuf};

/// The first line of an entry, followed by its key.
const HEADER: &str = "// vramkit kernel cache ";
/// The last line of an entry: a file without it was cut short.
const END: &str = "\n// vramkit kernel cache end\n";

/// Where kernels are kept, from the environment.
pub(super) fn dir_from_env() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    dir_from(
        var("VRAMKIT_KERNEL_CACHE"),
        var("XDG_CACHE_HOME"),
        var("HOME"),
    )
}

/// [`dir_from_env`] over given values.
fn dir_from(
    setting: Option<std::ffi::OsString>,
    xdg_cache: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    if let Some(s) = setting {
        let off = s.to_str().is_some_and(|s| {
            matches!(
                s.trim().to_ascii_lowercase().as_str(),
                "off" | "0" | "false" | "no" | "none"
            )
        });
        return (!off).then(|| PathBuf::from(s));
    }
    if let Some(x) = xdg_cache {
        return Some(PathBuf::from(x).join("vramkit").join("kernels"));
    }
    home.map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("vramkit")
            .join("kernels")
    })
}

/// The name of the entry for a kernel: 128 bits of two independent 64-bit hashes over the
/// source, the options (each with its length, so no two lists join to the same bytes), the
/// driver's version and vramkit's.
pub(super) fn key(source: &str, options: &[String], driver_version: i32) -> String {
    let mut parts: Vec<&[u8]> = vec![source.as_bytes(), env!("CARGO_PKG_VERSION").as_bytes()];
    let driver = driver_version.to_le_bytes();
    parts.push(&driver);
    parts.extend(options.iter().map(|o| o.as_bytes()));
    let hash = |seed: u64| {
        let mut h = seed;
        for p in &parts {
            h = mix(h ^ p.len() as u64);
            for chunk in p.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                h = mix(h ^ u64::from_le_bytes(word));
            }
        }
        h
    };
    format!(
        "{:016x}{:016x}",
        hash(0x6a09_e667_f3bc_c908),
        hash(0xbb67_ae85_84ca_a73b)
    )
}

/// SplitMix64's finalizer after an odd multiply: every input bit reaches every output bit.
fn mix(h: u64) -> u64 {
    let mut z = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn entry(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.ptx"))
}

/// The PTX kept under `key`, if a whole entry is there.
pub(super) fn load(dir: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(entry(dir, key)).ok()?;
    let body = text
        .strip_prefix(HEADER)?
        .strip_prefix(key)?
        .strip_prefix('\n')?;
    body.strip_suffix(END).map(str::to_owned)
}

/// Keeps `ptx` under `key`: written to a file of its own, then renamed into place, so a reader
/// (another process building the same kernel) sees a whole entry or none.
pub(super) fn store(dir: &Path, key: &str, ptx: &str) {
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{key}.{:016x}.tmp", unique()));
        // A new file of its own (never one that is there, nor a link's target).
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let text = format!("{HEADER}{key}\n{ptx}{END}");
        let written = std::io::Write::write_all(&mut file, text.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, entry(dir, key)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    };
    if let Err(e) = write() {
        log::debug!(
            "vramkit: kernel not kept in {} ({e}); set VRAMKIT_KERNEL_CACHE to a writable \
             folder, or to off",
            dir.display()
        );
    }
}

/// A number no other write of this machine uses at the same time: the process, the thread, the
/// time and a count, mixed.
fn unique() -> u64 {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let thread = format!("{:?}", std::thread::current().id());
    let mut h = mix(u64::from(std::process::id()) ^ n.rotate_left(32));
    h = mix(h ^ nanos);
    for b in thread.bytes() {
        h = mix(h ^ u64::from(b));
    }
    h
}

/// Drops an entry the driver refused, so the next build compiles afresh.
pub(super) fn forget(dir: &Path, key: &str) {
    let _ = std::fs::remove_file(entry(dir, key));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vramkit-kcache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_folder_follows_the_setting_then_xdg_then_home() {
        let s = |v: &str| Some(OsString::from(v));
        assert_eq!(
            dir_from(s("/k"), s("/x"), s("/h")),
            Some(PathBuf::from("/k"))
        );
        for off in ["off", "0", " OFF ", "false", "no", "none"] {
            assert_eq!(dir_from(s(off), s("/x"), s("/h")), None, "{off:?}");
        }
        assert_eq!(
            dir_from(None, s("/x"), s("/h")),
            Some(PathBuf::from("/x/vramkit/kernels"))
        );
        assert_eq!(
            dir_from(None, None, s("/h")),
            Some(PathBuf::from("/h/.cache/vramkit/kernels"))
        );
        assert_eq!(dir_from(None, None, None), None);
    }

    #[test]
    fn the_key_changes_with_everything_that_makes_the_ptx() {
        let with = |src: &str, opts: &[&str], driver: i32| {
            let opts: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
            key(src, &opts, driver)
        };
        const ARCH: &str = "--gpu-architecture=compute_90";
        let base = with("src", &["-DA=1", ARCH], 13000);
        assert_eq!(base.len(), 32);
        assert_eq!(base, with("src", &["-DA=1", ARCH], 13000));
        let others = [
            with("src ", &["-DA=1", ARCH], 13000),
            with("src", &["-DA=2", ARCH], 13000),
            with("src", &["-DA=1", "--gpu-architecture=compute_80"], 13000),
            with("src", &["-DA=1", ARCH], 12080),
            with("src", &["-DA=1--gpu-architecture=compute_90"], 13000),
            with("src", &["-DA=1", ARCH, "-DVRAMKIT_CHECKED"], 13000),
        ];
        for (i, k) in others.iter().enumerate() {
            assert_ne!(&base, k, "variant {i}");
        }
    }

    #[test]
    fn an_entry_round_trips_and_a_cut_or_foreign_one_is_a_miss() {
        let d = scratch("trip");
        let k = key("s", &[], 1);
        assert_eq!(load(&d, &k), None);
        let ptx = "//\n.version 9.0\n.entry f() { ret; }\n";
        store(&d, &k, ptx);
        assert_eq!(load(&d, &k).as_deref(), Some(ptx));
        // Cut short: no end line.
        let whole = std::fs::read_to_string(entry(&d, &k)).expect("scratch file");
        std::fs::write(entry(&d, &k), &whole[..whole.len() - 5]).expect("scratch file");
        assert_eq!(load(&d, &k), None);
        // Another key's entry under this name.
        let other = key("t", &[], 1);
        std::fs::write(entry(&d, &k), whole.replace(&k, &other)).expect("scratch file");
        assert_eq!(load(&d, &k), None);
        store(&d, &k, ptx);
        forget(&d, &k);
        assert_eq!(load(&d, &k), None);
        // Nothing left behind but entries.
        let left: Vec<_> = std::fs::read_dir(&d)
            .expect("scratch file")
            .flatten()
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_write_that_fails_leaves_no_file() {
        let d = scratch("full");
        let k = key("s", &[], 1);
        // The entry's name taken by a folder: the rename fails after the write.
        std::fs::create_dir_all(entry(&d, &k).join("x")).expect("scratch folder");
        store(&d, &k, "ptx");
        let names: Vec<String> = std::fs::read_dir(&d)
            .expect("scratch folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![format!("{k}.ptx")], "a temporary file was left");
        assert_eq!(load(&d, &k), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_no_error() {
        let d = scratch("file");
        std::fs::write(&d, b"a file, not a folder").expect("scratch file");
        store(&d.join("kernels"), "k", "ptx");
        assert_eq!(load(&d.join("kernels"), "k"), None);
        let _ = std::fs::remove_file(&d);
    }
}
