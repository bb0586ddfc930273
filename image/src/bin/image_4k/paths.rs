//! The tool's outputs: the file each input writes, refusing any output that would overwrite an
//! input, another output (also one differing only in case, which is the same file on macOS and
//! Windows volumes) or (without `--force`) an existing file.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::walk::Input;

/// `name` as a case-insensitive file system compares it: Unicode lowercase where the name is
/// UTF-8, else its bytes with ASCII letters lowered (two names differing in other bytes stay
/// apart, as they are on disk).
pub fn fold(name: &OsStr) -> Vec<u8> {
    match name.to_str() {
        Some(s) => s.to_lowercase().into_bytes(),
        None => name.as_encoded_bytes().to_ascii_lowercase(),
    }
}

/// Where each input's output goes, relative to `--out`: in the input's folder, named by its
/// stem (`photo.jpg` → `photo.EXT`), or, where two inputs of one folder share a stem ignoring
/// case (`x.png` and `x.jpg`), by its whole file name (`x.png.EXT`, `x.jpg.EXT`), and where
/// those still differ only in case (`IMG.JPG`, `img.jpg`), by the stem and `~1`, `~2`, so that
/// no two outputs meet. Names are kept as the OS gives them (also where they are not UTF-8).
pub fn output_names(inputs: &[Input], ext: &str) -> Vec<PathBuf> {
    let stem = |p: &Path| p.file_stem().unwrap_or(OsStr::new("frame")).to_os_string();
    let key = |i: &Input| (i.folder.clone(), fold(&stem(&i.path)));
    let mut count: HashMap<(PathBuf, Vec<u8>), usize> = HashMap::new();
    for i in inputs {
        *count.entry(key(i)).or_default() += 1;
    }
    let names: Vec<OsString> = inputs
        .iter()
        .map(|i| match i.path.file_name() {
            Some(name) if count[&key(i)] > 1 => name.to_os_string(),
            _ => stem(&i.path),
        })
        .collect();
    // Names still equal ignoring case (`IMG.JPG`, `img.jpg`) but not byte for byte are one file
    // on macOS and Windows volumes: each takes `~N`. Names equal byte for byte stay so, for
    // `check_outputs` to refuse (one input given twice, or one name in two folders).
    let mut groups: HashMap<(PathBuf, Vec<u8>), Vec<usize>> = HashMap::new();
    for (k, (i, n)) in inputs.iter().zip(&names).enumerate() {
        groups
            .entry((i.folder.clone(), fold(n)))
            .or_default()
            .push(k);
    }
    let mut tilde = vec![0; inputs.len()];
    for members in groups.values() {
        if members.iter().any(|&k| names[k] != names[members[0]]) {
            for (n, &k) in members.iter().enumerate() {
                tilde[k] = n + 1;
            }
        }
    }
    inputs
        .iter()
        .zip(names)
        .zip(tilde)
        .map(|((i, mut name), n)| {
            if n > 0 {
                name = stem(&i.path);
                name.push(format!("~{n}"));
            }
            name.push(".");
            name.push(ext);
            i.folder.join(name)
        })
        .collect()
}

/// What makes two paths the same file: device and inode where there are such, else the
/// canonical path. `None` for a path that does not exist.
fn identity(path: &Path) -> Option<(u64, u64, PathBuf)> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino(), PathBuf::new()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0, std::fs::canonicalize(path).ok()?))
    }
}

/// What to do with an output that exists already (an earlier run's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Refuse the run (the default).
    Refuse,
    /// Replace it (`--force`).
    Replace,
    /// Leave it and skip its input (`--skip-existing`).
    Skip,
}

/// Refuses outputs that would overwrite an input (the same path, or a link to it) or each other
/// (one input given twice, two of one file name in different directories, or two names that
/// differ only in case), and treats outputs that exist as `existing` says. Returns, for each
/// output, whether it exists and is to be skipped.
///
/// # Errors
/// A message naming the output and what it would destroy, and what to do.
pub fn check_outputs(
    inputs: &[PathBuf],
    outputs: &[PathBuf],
    existing: Existing,
) -> Result<Vec<bool>, String> {
    let ids: HashMap<_, &Path> = inputs
        .iter()
        .filter_map(|p| Some((identity(p)?, p.as_path())))
        .collect();
    let mut taken: HashMap<&Path, &Path> = HashMap::new();
    let mut folded: HashMap<Vec<u8>, &Path> = HashMap::new();
    let mut skip = Vec::with_capacity(outputs.len());
    for (input, output) in inputs.iter().zip(outputs) {
        if let Some(victim) = identity(output).and_then(|id| ids.get(&id)) {
            return Err(format!(
                "{}: writing the output of {} there would overwrite the input {}; give another \
                 --out directory",
                output.display(),
                input.display(),
                victim.display()
            ));
        }
        if let Some(first) = taken.insert(output, input) {
            return Err(format!(
                "{}: both {} and {} would write this output; give them different names, \
                 process them separately, or give their folders with --recursive (outputs then \
                 keep the folder structure under --out)",
                output.display(),
                first.display(),
                input.display()
            ));
        }
        if let Some(other) = folded.insert(fold(output.as_os_str()), output) {
            return Err(format!(
                "{} and {}: outputs whose names differ only in case, which are one file on \
                 macOS and Windows volumes; rename one of the inputs ({}) or process them \
                 separately",
                other.display(),
                output.display(),
                input.display()
            ));
        }
        let exists = std::fs::symlink_metadata(output).is_ok();
        if exists && existing == Existing::Refuse {
            return Err(format!(
                "{}: the output of {} exists already (an earlier run's?); give --skip-existing \
                 to leave it and process the rest, --force to replace it, or another --out \
                 directory",
                output.display(),
                input.display()
            ));
        }
        skip.push(exists && existing == Existing::Skip);
    }
    Ok(skip)
}

/// Image formats the tool reads or others write but it does not write: an `--out` with one of
/// these extensions is a mistaken output file, not a directory to create.
const UNWRITTEN_FORMATS: &[&str] = &[
    "tif", "tiff", "bmp", "gif", "heic", "heif", "avif", "jxl", "jp2", "exr", "hdr", "ppm", "pgm",
    "pnm", "tga", "ico", "dng", "raw", "cr2", "cr3", "nef", "arw", "orf", "rw2", "psd", "svg",
];

/// Checks `--out` before anything runs: an existing path must be a directory or a file whose
/// extension the tool writes (replaced only with `--force`), and a new one a directory name or
/// a file name of a format the tool writes.
///
/// # Errors
/// What is wrong with `--out` and what to give instead.
pub fn check_out(out: &Path) -> Result<(), String> {
    let writes = "png, jpg, jpeg or webp";
    let ext = out.extension().map(|e| e.to_string_lossy().to_lowercase());
    let written = crate::output::OutFormat::from_path(out).is_some();
    match std::fs::metadata(out) {
        Ok(meta) if !meta.is_dir() && !written => Err(format!(
            "--out {} is an existing file, not a directory, and not a .png, .jpg or .webp \
             output; give a directory, or a file name ending in {writes}",
            out.display()
        )),
        Err(_)
            if ext
                .as_deref()
                .is_some_and(|e| UNWRITTEN_FORMATS.contains(&e)) =>
        {
            Err(format!(
            "--out {}: the tool does not write .{} files; give a file name ending in {writes}, \
             or a directory",
            out.display(),
            ext.unwrap_or_default()
        ))
        }
        _ => Ok(()),
    }
}
