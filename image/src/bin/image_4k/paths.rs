//! The tool's files: inputs (directories expanded to their PNG and JPEG files) and the output
//! each writes, refusing any output that would overwrite an input, another output or (without
//! `--force`) an existing file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The files to process: each path that is a file, and the PNG and JPEG files (by extension) of
/// each directory, sorted.
///
/// # Errors
/// A message naming a directory that can not be listed or holds no PNG or JPEG file.
pub fn inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            for entry in std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))? {
                let f = entry
                    .map_err(|e| format!("{}: cannot list: {e}", p.display()))?
                    .path();
                let image = f
                    .extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| ["png", "jpg", "jpeg"].contains(&x.to_lowercase().as_str()));
                if image && !f.is_dir() {
                    found.push(f);
                }
            }
            if found.is_empty() {
                return Err(format!(
                    "{}: the directory holds no .png, .jpg or .jpeg file; give image files or \
                     a directory of them",
                    p.display()
                ));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// The name of each input's output, without extension: its stem (`photo.jpg` → `photo`),
/// or, where two inputs share a stem ignoring case (`x.png` and `x.jpg`), its whole file name
/// (`x.png`, `x.jpg`: outputs `x.png.png` and `x.jpg.png`), so that no two outputs meet.
pub fn output_names(inputs: &[PathBuf]) -> Vec<String> {
    let stem = |p: &Path| {
        p.file_stem()
            .map_or("frame".into(), |s| s.to_string_lossy().into_owned())
    };
    let mut count: HashMap<String, usize> = HashMap::new();
    for p in inputs {
        *count.entry(stem(p).to_lowercase()).or_default() += 1;
    }
    inputs
        .iter()
        .map(|p| {
            let s = stem(p);
            match p.file_name() {
                Some(name) if count[&s.to_lowercase()] > 1 => name.to_string_lossy().into_owned(),
                _ => s,
            }
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

/// Refuses outputs that would overwrite an input (the same path, or a link to it), each other
/// (one input given twice, or two of one file name in different directories), or, without
/// `force`, a file that exists (an earlier run's output).
///
/// # Errors
/// A message naming the output and what it would destroy, and what to do.
pub fn check_outputs(inputs: &[PathBuf], outputs: &[PathBuf], force: bool) -> Result<(), String> {
    let ids: HashMap<_, &Path> = inputs
        .iter()
        .filter_map(|p| Some((identity(p)?, p.as_path())))
        .collect();
    let mut taken: HashMap<&Path, &Path> = HashMap::new();
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
                "{}: both {} and {} would write this output; give them different names or \
                 process them separately",
                output.display(),
                first.display(),
                input.display()
            ));
        }
        if !force && std::fs::symlink_metadata(output).is_ok() {
            return Err(format!(
                "{}: the output of {} exists already (an earlier run's?); give --force to \
                 replace it, or another --out directory",
                output.display(),
                input.display()
            ));
        }
    }
    Ok(())
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
