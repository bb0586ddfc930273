//! Writing an output: encoding (PNG, JPEG or lossless WebP) into a temporary file in the output
//! directory, then renaming it into place, so that an output is whole or absent, and never
//! replaces a file that appeared meanwhile unless `--force` was given.

use std::io::{BufWriter, Write};
use std::path::Path;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::{ExtendedColorType, ImageEncoder};

/// The file format outputs are written in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    /// 8-bit RGBA PNG.
    Png,
    /// 8-bit RGB JPEG at `--quality` (alpha is dropped: JPEG has none).
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

/// Encodes `rgba` (`size`, RGBA8) as `format` into `w`.
fn encode<W: Write>(
    w: W,
    format: OutFormat,
    quality: u8,
    rgba: &[u8],
    [width, height]: [u32; 2],
) -> Result<(), String> {
    let r = match format {
        OutFormat::Png => {
            PngEncoder::new(w).write_image(rgba, width, height, ExtendedColorType::Rgba8)
        }
        OutFormat::Webp => {
            WebPEncoder::new_lossless(w).write_image(rgba, width, height, ExtendedColorType::Rgba8)
        }
        OutFormat::Jpg => {
            let mut rgb = Vec::new();
            rgb.try_reserve_exact(rgba.len() / 4 * 3)
                .map_err(|_| "no host memory for the RGB copy JPEG needs".to_string())?;
            for px in rgba.chunks_exact(4) {
                rgb.extend_from_slice(&px[..3]);
            }
            JpegEncoder::new_with_quality(w, quality).write_image(
                &rgb,
                width,
                height,
                ExtendedColorType::Rgb8,
            )
        }
    };
    r.map_err(|e| format!("cannot encode as {}: {e}", format.extension()))
}

/// Writes `rgba` to `path` as `format`: into a temporary file beside it, renamed into place.
/// Without `force` the rename refuses to replace a file that exists at `path` by then.
///
/// # Errors
/// What failed (creating, encoding, writing or renaming), in words; no file is left at `path`
/// or in the directory.
pub fn write(
    path: &Path,
    format: OutFormat,
    quality: u8,
    rgba: &[u8],
    size: [u32; 2],
    force: bool,
) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".image_4k-")
        .suffix(".part")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot create a temporary file in {}: {e}", dir.display()))?;
    let mut out = BufWriter::new(tmp.as_file());
    encode(&mut out, format, quality, rgba, size)?;
    out.flush()
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
    drop(out);
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
    })
}
