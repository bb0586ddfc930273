//! Finding the inputs: each file named, and the PNG and JPEG files (by extension, see
//! [`EXTENSIONS`]) of each directory named, with `--recursive` those of its folders too, each
//! keeping the folder it sits in (relative to the `--out` directory) so that outputs mirror the
//! input tree. Files that are not images the tool could read are skipped and counted: macOS's
//! AppleDouble companions (`._IMG_0001.JPG`), anything that is not a regular file (a FIFO would
//! block the tool forever), and, below a named directory, hidden folders (`.Trashes`) and links
//! to folders (never followed, so a link cannot make a loop).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::FileType;
use std::path::{Path, PathBuf};

/// One input file, and the folder its output goes in, relative to `--out`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub path: PathBuf,
    pub folder: PathBuf,
}

/// The inputs found, and what was skipped: each reason, with how many files and the first.
#[derive(Debug, Default)]
pub struct Found {
    pub files: Vec<Input>,
    pub skipped: BTreeMap<&'static str, (usize, PathBuf)>,
}

impl Found {
    fn skip(&mut self, why: &'static str, path: PathBuf) {
        self.skipped.entry(why).or_insert((0, path)).0 += 1;
    }

    /// One line per reason, for the user: `skipped 3 files: AppleDouble ... (first: PATH)`.
    pub fn skipped_lines(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(why, (n, first))| {
                let first = if *n > 1 {
                    format!(" (the first: {})", first.display())
                } else {
                    format!(": {}", first.display())
                };
                format!("skipped {n} {why}{first}")
            })
            .collect()
    }
}

const APPLE_DOUBLE: &str = "AppleDouble file(s) (`._*`, macOS metadata beside a file, not images)";
const NOT_REGULAR: &str =
    "image name(s) that are not regular files (a FIFO, socket or device; never opened)";
const HIDDEN: &str = "hidden folder(s) (`.*`)";
const LINKED_FOLDER: &str = "link(s) to folders (not followed)";
const OUT_FOLDER: &str = "folder(s) that are --out (outputs, not inputs)";
const UNLISTED: &str = "folder(s) that cannot be listed";
const AGAIN: &str = "file(s) given again (each is made once, where first given)";
const OTHER_FORMAT: &str =
    "image file(s) in a format the tool does not read (HEIC, WebP, TIFF, raw, ...)";

/// Extensions (any case) of image formats the tool does not read, reported when a folder holds
/// them rather than passed over in silence: phones' HEIC and AVIF, WebP, TIFF, GIF, BMP, JPEG
/// XL and cameras' raw files.
const OTHER_FORMATS: [&str; 21] = [
    "webp", "heic", "heif", "avif", "tif", "tiff", "gif", "bmp", "jxl", "dng", "cr2", "cr3", "crw",
    "nef", "nrw", "arw", "raf", "orf", "rw2", "pef", "srw",
];

/// Device and inode of a directory, where there are such (`None`: not one, or unknown).
fn dir_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        m.is_dir().then(|| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The extensions (any case) a folder's files are taken by: PNG, and JPEG's spellings (`.jfif`
/// and `.jpe` are JPEG files too; the decoder goes by the bytes, not the name).
const EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "jpe", "jfif"];

/// Whether a file name has an extension the tool reads (one of [`EXTENSIONS`], any case).
fn is_image_name(name: &Path) -> bool {
    name.extension()
        .and_then(|x| x.to_str())
        .is_some_and(|x| EXTENSIONS.contains(&x.to_ascii_lowercase().as_str()))
}

/// Whether a file name has the extension of an image format the tool does not read (one of
/// [`OTHER_FORMATS`], any case).
fn is_other_image_name(name: &Path) -> bool {
    name.extension()
        .and_then(|x| x.to_str())
        .is_some_and(|x| OTHER_FORMATS.contains(&x.to_ascii_lowercase().as_str()))
}

/// Whether `name` is an AppleDouble companion file (`._` and the name it describes).
fn is_apple_double(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b"._")
}

/// The folder a directory named on the command line mirrors under `--out` with `--recursive`:
/// its own name (`cp -r` does the same), none for `.`, `..` or `/`.
fn root_folder(dir: &Path) -> PathBuf {
    match dir.components().next_back() {
        Some(std::path::Component::Normal(name)) => PathBuf::from(name),
        _ => PathBuf::new(),
    }
}

/// The files to process: each path given that is not a directory as it is (the decoder says
/// what is wrong with it), and the image files of each directory, sorted; with `recursive`,
/// those of its folders too, each with the folder (the directory's name and the path below
/// it) its output goes in.
///
/// # Errors
/// A message naming a directory that can not be listed or holds no image file (suggesting
/// `--recursive` where it has folders).
pub fn inputs(paths: &[PathBuf], recursive: bool, out: &Path) -> Result<Found, String> {
    let mut found = Found::default();
    let out = dir_id(out);
    for p in paths {
        if !p.is_dir() {
            found.files.push(Input {
                path: p.clone(),
                folder: PathBuf::new(),
            });
            continue;
        }
        let before = found.files.len();
        let folder = if recursive {
            root_folder(p)
        } else {
            PathBuf::new()
        };
        let entries = std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let others_before = found.skipped.get(OTHER_FORMAT).map_or(0, |s| s.0);
        let folders = list(entries, p, &folder, recursive, out, &mut found)?;
        if found.files.len() == before {
            let hint = if folders > 0 && !recursive {
                format!(
                    "; it has {folders} folder(s): give --recursive to look inside them (outputs \
                     keep the folder structure under --out)"
                )
            } else {
                "; give image files or a directory of them".into()
            };
            let here = found.skipped.get(OTHER_FORMAT).map_or(0, |s| s.0) - others_before;
            let others = match here {
                0 => String::new(),
                n => format!(
                    " (but {n} image file(s) in formats the tool does not read, such as HEIC, \
                     WebP, TIFF or raw: convert them to PNG or JPEG)"
                ),
            };
            let what = if recursive { " or its folders" } else { "" };
            return Err(format!(
                "{}: the directory{what} holds no .png, .jpg, .jpeg, .jpe or .jfif \
                 file{others}{hint}",
                p.display()
            ));
        }
        found.files[before..].sort_by(|a, b| a.path.cmp(&b.path));
    }
    // One file reached twice (named twice, or by name and in its folder) is made once, from
    // where it was first reached.
    let mut seen = std::collections::HashSet::new();
    for f in std::mem::take(&mut found.files) {
        let first = std::fs::canonicalize(&f.path).map_or(true, |c| seen.insert(c));
        if first {
            found.files.push(f);
        } else {
            found.skip(AGAIN, f.path);
        }
    }
    Ok(found)
}

/// Adds the image files of `dir` (its `entries`; with `recursive`, those of its folders too,
/// except the `--out` folder, `out`) to `found`, their outputs going in `folder`. Returns how
/// many folders `dir` has.
fn list(
    entries: std::fs::ReadDir,
    dir: &Path,
    folder: &Path,
    recursive: bool,
    out: Option<(u64, u64)>,
    found: &mut Found,
) -> Result<usize, String> {
    let mut folders = 0;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: cannot list: {e}", dir.display()))?;
        let (path, name) = (entry.path(), entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let (kind, linked) = if kind.is_symlink() {
            // A link is taken for what it points at; a broken one is left to the decoder.
            match std::fs::metadata(&path) {
                Ok(m) => (m.file_type(), true),
                Err(_) => (kind, true),
            }
        } else {
            (kind, false)
        };
        if kind.is_dir() {
            folders += 1;
            if !recursive {
                continue;
            }
            if linked {
                found.skip(LINKED_FOLDER, path);
            } else if name.as_encoded_bytes().starts_with(b".") {
                found.skip(HIDDEN, path);
            } else if out.is_some() && dir_id(&path) == out {
                found.skip(OUT_FOLDER, path);
            } else {
                match std::fs::read_dir(&path) {
                    Ok(inner) => {
                        list(inner, &path, &folder.join(&name), recursive, out, found)?;
                    }
                    Err(_) => found.skip(UNLISTED, path),
                }
            }
            continue;
        }
        if !is_image_name(Path::new(&name)) {
            if is_other_image_name(Path::new(&name)) && !is_apple_double(&name) {
                found.skip(OTHER_FORMAT, path);
            }
            continue;
        }
        if is_apple_double(&name) {
            found.skip(APPLE_DOUBLE, path);
        } else if !is_regular(kind, linked) {
            found.skip(NOT_REGULAR, path);
        } else {
            found.files.push(Input {
                path,
                folder: folder.to_path_buf(),
            });
        }
    }
    Ok(folders)
}

/// Whether an entry is a regular file (a broken link counts as one: opening it says why it
/// fails).
fn is_regular(kind: FileType, linked: bool) -> bool {
    kind.is_file() || (linked && kind.is_symlink())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jpeg_spelling_is_taken_from_a_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let names = [
            "a.png", "b.JPG", "c.jpeg", "d.jfif", "e.JFIF", "f.jpe", "g.JPE", "h.Jfif", "i.txt",
            "j.webp",
        ];
        for name in names {
            std::fs::write(dir.path().join(name), b"").expect("write");
        }
        let found = inputs(&[dir.path().to_path_buf()], false, &dir.path().join("out"))
            .expect("a folder with images");
        let taken: Vec<_> = found
            .files
            .iter()
            .filter_map(|f| f.path.file_name()?.to_str())
            .collect();
        assert_eq!(taken, &names[..8]);
        assert_eq!(
            found.skipped_lines(),
            [format!(
                "skipped 1 {OTHER_FORMAT}: {}",
                dir.path().join("j.webp").display()
            )]
        );
    }

    /// A folder of phone and camera files the tool does not read says so, rather than only
    /// that it holds no PNG or JPEG; AppleDouble companions and other files are not counted.
    #[test]
    fn a_folder_of_other_image_formats_says_what_it_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "IMG_0001.HEIC",
            "IMG_0002.heic",
            "DSC_0003.NEF",
            "._IMG_0001.HEIC",
            "a.mov",
        ] {
            std::fs::write(dir.path().join(name), b"").expect("write");
        }
        let e = match inputs(&[dir.path().to_path_buf()], false, &dir.path().join("out")) {
            Ok(_) => panic!("a folder of no PNG or JPEG"),
            Err(e) => e,
        };
        assert!(
            e.contains("holds no .png") && e.contains("(but 3 image file(s) in formats the tool"),
            "{e}"
        );
    }

    /// Each folder's message counts its own files: a folder after one with HEIC files, and
    /// with none of its own, says nothing of them.
    #[test]
    fn each_folder_counts_its_own_other_formats() {
        let (first, second) = (
            tempfile::tempdir().expect("dir"),
            tempfile::tempdir().expect("dir"),
        );
        for name in ["a.png", "b.heic", "c.HEIC"] {
            std::fs::write(first.path().join(name), b"").expect("write");
        }
        std::fs::write(second.path().join("notes.txt"), b"").expect("write");
        let dirs = [first.path().to_path_buf(), second.path().to_path_buf()];
        let e = match inputs(&dirs, false, &first.path().join("out")) {
            Ok(_) => panic!("the second folder holds no PNG or JPEG"),
            Err(e) => e,
        };
        assert!(e.contains("holds no .png") && !e.contains("(but"), "{e}");
    }
}
