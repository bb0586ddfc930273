//! Writing an output: encoding (PNG, JPEG or lossless WebP) into a temporary file in the output
//! directory, then renaming it into place, so that an output is whole or absent, and never
//! replaces a file that appeared meanwhile unless `--force` was given. A 16-bit frame (from a
//! 16-bit input) is written as a 16-bit PNG; JPEG and WebP hold 8 bits, so it is rounded there.
//! Ctrl-C, SIGTERM or SIGHUP while outputs are written removes their temporary files
//! ([`remove_unfinished_on_signals`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::{ExtendedColorType, ImageEncoder};

use crate::input::metadata::Metadata;
use crate::input::Samples;
use crate::{embed, flatten};

/// The file format outputs are written in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    /// RGBA PNG, 16-bit when the input was, else 8-bit.
    Png,
    /// 8-bit RGB JPEG at `--quality` (JPEG has no alpha: translucent pixels are composited over
    /// `--background`, white by default).
    Jpg,
    /// Lossless 8-bit RGBA WebP.
    Webp,
}

impl OutFormat {
    /// The extension outputs get.
    pub fn extension(self) -> &'static str {
        match self {
            OutFormat::Png => "png",
            OutFormat::Jpg => "jpg",
            OutFormat::Webp => "webp",
        }
    }

    /// The format a file name's extension names, if any.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_lowercase();
        match ext.as_str() {
            "png" => Some(OutFormat::Png),
            "jpg" | "jpeg" => Some(OutFormat::Jpg),
            "webp" => Some(OutFormat::Webp),
            _ => None,
        }
    }
}

/// 16-bit samples rounded to 8 bits (`round(v · 255 / 65535)`).
fn narrow(wide: &[u16]) -> Result<Vec<u8>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(wide.len())
        .map_err(|_| "no host memory for the 8-bit copy of the 16-bit output".to_string())?;
    v.extend(
        wide.iter()
            .map(|&s| ((u32::from(s) * 255 + 32_767) / 65_535) as u8),
    );
    Ok(v)
}

/// How outputs are encoded.
#[derive(Clone, Copy, Debug)]
pub struct Encoding {
    pub format: OutFormat,
    /// JPEG quality, 1 to 100.
    pub quality: u8,
    /// What JPEG composites translucent pixels over (`None`: white, with a warning).
    pub background: Option<[u8; 3]>,
}

/// Hands the profile and EXIF to an encoder, saying what it would not take.
fn with_metadata<E: ImageEncoder>(
    mut e: E,
    format: OutFormat,
    meta: &Metadata,
    notes: &mut Vec<String>,
) -> E {
    // JPEG holds EXIF in one segment (65,535 bytes with its length and `Exif\0\0`) and a
    // profile in at most 255 of them; a PNG's may be larger, and an encoder given more would
    // write a broken segment length.
    let jpeg = format == OutFormat::Jpg;
    if let Some(icc) = &meta.icc {
        if jpeg && icc.len() > 255 * 65_519 {
            notes.push(format!(
                "its colour profile ({} bytes) is larger than JPEG holds: it was left out",
                icc.len()
            ));
        } else if e.set_icc_profile(icc.clone()).is_err() {
            notes.push("the encoder does not write colour profiles: it was left out".into());
        }
    }
    if let Some(exif) = &meta.exif {
        if jpeg && exif.len() > 65_527 {
            notes.push(format!(
                "its EXIF ({} bytes) is larger than one JPEG segment holds: it was left out",
                exif.len()
            ));
        } else if e.set_exif_metadata(exif.clone()).is_err() {
            notes.push("the encoder does not write EXIF: it was left out".into());
        }
    }
    e
}

/// Encodes `samples` (`size`, RGBA) with the input's metadata. Returns the file's bytes and
/// what the user should know, if anything: translucent pixels composited over white because
/// no background was given, metadata that could not be written.
fn encode(
    how: &Encoding,
    meta: &Metadata,
    samples: &Samples,
    [width, height]: [u32; 2],
) -> Result<(Vec<u8>, Option<String>), String> {
    let format = how.format;
    let failed = |e: image::ImageError| format!("cannot encode as {}: {e}", format.extension());
    let mut notes = Vec::new();
    let mut bytes = Vec::new();
    if format == OutFormat::Jpg {
        let (rgb, translucent) = flatten::over(samples, how.background.unwrap_or(flatten::WHITE))?;
        with_metadata(
            JpegEncoder::new_with_quality(&mut bytes, how.quality),
            format,
            meta,
            &mut notes,
        )
        .write_image(&rgb, width, height, ExtendedColorType::Rgb8)
        .map_err(failed)?;
        if translucent && how.background.is_none() {
            notes.push(
                "the image has transparent pixels and JPEG has no alpha: they were composited \
                 over white (give --background COLOUR to choose, or --out-format png or webp to \
                 keep alpha)"
                    .into(),
            );
        }
    } else {
        let narrowed;
        let (data, kind) = match (samples, format) {
            (Samples::Rgba16(wide), OutFormat::Png) => {
                // The encoder takes native-endian samples and writes them big-endian.
                let mut b = Vec::new();
                b.try_reserve_exact(wide.len() * 2)
                    .map_err(|_| "no host memory for the 16-bit PNG's bytes".to_string())?;
                b.extend(wide.iter().flat_map(|s| s.to_ne_bytes()));
                narrowed = b;
                (&narrowed, ExtendedColorType::Rgba16)
            }
            (Samples::Rgba16(wide), _) => {
                narrowed = narrow(wide)?;
                (&narrowed, ExtendedColorType::Rgba8)
            }
            (Samples::Rgba8(rgba), _) => (rgba, ExtendedColorType::Rgba8),
        };
        match format {
            OutFormat::Webp => with_metadata(
                WebPEncoder::new_lossless(&mut bytes),
                format,
                meta,
                &mut notes,
            )
            .write_image(data, width, height, kind),
            _ => with_metadata(PngEncoder::new(&mut bytes), format, meta, &mut notes)
                .write_image(data, width, height, kind),
        }
        .map_err(failed)?;
    }
    if let Some(xmp) = &meta.xmp {
        let added = match format {
            OutFormat::Jpg => embed::jpeg_with_xmp(&mut bytes, xmp),
            OutFormat::Png => embed::png_with_xmp(&mut bytes, xmp),
            OutFormat::Webp => embed::webp_with_xmp(&mut bytes, xmp, [width, height], true),
        };
        if let Err(why) = added {
            notes.push(why);
        }
    }
    Ok((bytes, (!notes.is_empty()).then(|| notes.join("; "))))
}

/// The temporary files being written now: a signal removes them before the tool exits.
static UNFINISHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn unfinished() -> MutexGuard<'static, Vec<PathBuf>> {
    UNFINISHED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary file listed in [`UNFINISHED`] until dropped (renamed into place, or removed).
struct Listed(PathBuf);

impl Drop for Listed {
    fn drop(&mut self) {
        unfinished().retain(|p| *p != self.0);
    }
}

/// On Ctrl-C (SIGINT), SIGTERM or SIGHUP (those not ignored when the tool started): removes the
/// temporary files of outputs being written (finished outputs stay: each is whole), says so,
/// and exits with 128 + the signal's number, as a shell reports a process the signal ended.
/// Where signals cannot be watched, the tool runs as before, with a warning.
#[cfg(unix)]
pub fn remove_unfinished_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // A signal the tool was started ignoring (`nohup`, a background job) stays ignored.
    let watched: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&s| !ignored(s))
        .collect();
    let mut signals = match signal_hook::iterator::Signals::new(watched) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "warning: cannot watch for Ctrl-C ({e}): an interrupted run may leave .part files"
            );
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // Held until the exit: no new temporary file is made meanwhile.
            let parts = unfinished();
            let removed = parts
                .iter()
                .filter(|p| std::fs::remove_file(p).is_ok())
                .count();
            eprintln!(
                "\ninterrupted: removed {removed} unfinished output(s); outputs already written \
                 are whole (--skip-existing goes on from there)"
            );
            std::process::exit(128 + signal);
        }
    });
}

/// Whether `signal`'s action is to be ignored.
#[cfg(unix)]
fn ignored(signal: i32) -> bool {
    // SAFETY: `sigaction` is a plain C struct, for which all zeroes is a valid value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one, into `old`, which is valid and
    // writable for the call.
    let read = unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
    read == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// Without unix signals there is nothing to watch.
#[cfg(not(unix))]
pub fn remove_unfinished_on_signals() {}

/// Writes `samples` to `path` as `how` says, with the input's colour profile, EXIF and XMP
/// (`meta`): into a temporary file beside it, renamed into place.
/// Returns a warning for the user, if any (see [`Encoding::background`]).
/// Without `force` the rename refuses to replace a file that exists at `path` by then. A new
/// file gets the mode of any file the user creates (0666 less the umask); a file `force`
/// replaces keeps its mode.
///
/// # Errors
/// What failed (creating, encoding, writing or renaming), in words; no file is left at `path`
/// or in the directory.
pub fn write(
    path: &Path,
    how: &Encoding,
    meta: &Metadata,
    samples: &Samples,
    size: [u32; 2],
    force: bool,
) -> Result<Option<String>, String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".image_4k-").suffix(".part");
    // tempfile's own mode is 0600, which the rename would keep; `open` applies the umask to this.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    // Made and listed under the lock, so that a signal's cleanup sees every temporary file; it
    // leaves the list after the file is renamed or removed (locals drop in reverse order).
    let (_listed, tmp) = {
        let mut parts = unfinished();
        let tmp = builder
            .tempfile_in(dir)
            .map_err(|e| format!("cannot create a temporary file in {}: {e}", dir.display()))?;
        parts.push(tmp.path().to_path_buf());
        let listed = Listed(tmp.path().to_path_buf());
        (listed, tmp)
    };
    if force {
        if let Ok(meta) = std::fs::metadata(path) {
            tmp.as_file()
                .set_permissions(meta.permissions())
                .map_err(|e| {
                    format!(
                        "cannot give {} the mode of {}: {e}",
                        tmp.path().display(),
                        path.display()
                    )
                })?;
        }
    }
    let (bytes, warning) = encode(how, meta, samples, size)?;
    tmp.as_file()
        .write_all(&bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
    drop(bytes);
    let done = if force {
        tmp.persist(path).map(drop)
    } else {
        tmp.persist_noclobber(path).map(drop)
    };
    done.map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            "a file appeared there while the tool ran; give --force to replace it".to_string()
        } else {
            format!("cannot rename the finished output into place: {}", e.error)
        }
    })?;
    Ok(warning)
}
