//! The tool's files: inputs (directories expanded to their PNG and JPEG files) and the output
//! each writes, refusing any output that would overwrite an input or another output.

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

/// The name of the output of `input`: its stem.
pub fn output_name(input: &Path) -> String {
    input
        .file_stem()
        .map_or("frame".into(), |s| s.to_string_lossy().into_owned())
}

/// Where the output of `input` goes: `out/<stem>.png`.
pub fn output_path(out: &Path, input: &Path) -> PathBuf {
    out.join(format!("{}.png", output_name(input)))
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

/// Refuses outputs that would overwrite an input (the same path, or a link to it) or each
/// other (two inputs of one stem, or one input given twice).
///
/// # Errors
/// A message naming the output and the inputs it would destroy, and what to do.
pub fn check_outputs(inputs: &[PathBuf], out: &Path) -> Result<(), String> {
    let ids: HashMap<_, &Path> = inputs
        .iter()
        .filter_map(|p| Some((identity(p)?, p.as_path())))
        .collect();
    let mut taken: HashMap<PathBuf, &Path> = HashMap::new();
    for input in inputs {
        let output = output_path(out, input);
        if let Some(victim) = identity(&output).and_then(|id| ids.get(&id)) {
            return Err(format!(
                "{}: writing the output of {} there would overwrite the input {}; give another \
                 --out directory",
                output.display(),
                input.display(),
                victim.display()
            ));
        }
        if let Some(first) = taken.insert(output.clone(), input) {
            return Err(format!(
                "{}: both {} and {} would write this output; give them different names or \
                 process them separately",
                output.display(),
                first.display(),
                input.display()
            ));
        }
    }
    Ok(())
}
