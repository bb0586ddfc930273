//! The tool's input path: reading a file and decoding a PNG or JPEG (RGB, RGBA, grey or
//! grey+alpha; 8 or 16 bits) into an upright RGBA8 or RGBA16 frame (EXIF orientation applied),
//! refusing files cut short, with every size checked before anything of that size is allocated.
//! The fuzz target `image_input` and `tests/fuzz_corpus.rs` include this file, so what they
//! check is what the tool runs.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek};
use std::path::Path;

use image::metadata::Orientation;
use image::{ColorType, ImageDecoder, ImageError, ImageFormat, ImageReader};
use vramkit_image::{MAX_FRAME_PIXELS, MAX_SIDE};

// Beside this file whichever crate includes it (the tool, the fuzz checks).
#[path = "container.rs"]
mod container;
#[path = "decode_error.rs"]
mod decode_error;
#[path = "metadata.rs"]
pub mod metadata;
#[path = "orient.rs"]
mod orient;
#[path = "unended.rs"]
mod unended;

use decode_error::classify;
use metadata::Metadata;

/// Bytes a decoder may hold beyond the decoded frame (zlib window, row and scan buffers).
const DECODER_SLACK: u64 = 16 << 20;
/// Bytes of the widest pixel the tool decodes: RGBA, 16 bits a sample.
const MAX_BYTES_PER_PIXEL: u64 = 8;

/// The largest images the input path takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputLimits {
    /// The longest side, in pixels.
    pub max_side: u32,
    /// The most pixels.
    pub max_pixels: u64,
}

impl InputLimits {
    /// The most a pipeline takes (`--max-pixels` may not go past `max_pixels`).
    pub const TOOL: Self = Self {
        max_side: MAX_SIDE,
        max_pixels: MAX_FRAME_PIXELS,
    };

    /// The most bytes a file within these limits can have: an uncompressed 16-bit RGBA frame
    /// and a fifth more for the container (PNG's stored blocks, row filters, chunks).
    pub fn max_file_bytes(&self) -> u64 {
        self.max_pixels * MAX_BYTES_PER_PIXEL / 5 * 6 + (1 << 20)
    }
}

/// Why an input was refused.
#[derive(Debug)]
pub enum InputError {
    /// The file could not be opened or read.
    Unreadable(std::io::Error),
    /// The bytes are not a PNG or JPEG file.
    NotAnImage,
    /// A PNG or JPEG that is damaged or cut short.
    Corrupt(String),
    /// An image of a kind the tool does not take (its format or pixels).
    Unsupported(String),
    /// An image of width or height 0.
    Empty([u32; 2]),
    /// An image (or file) larger than the limits.
    TooLarge(String),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Unreadable(e) => write!(f, "cannot read: {e}"),
            InputError::NotAnImage => write!(
                f,
                "not a PNG or JPEG image (its first bytes are neither signature); \
                 give PNG or JPEG files"
            ),
            InputError::Corrupt(why) => write!(
                f,
                "a damaged or truncated image that can not be decoded ({why}); \
                 re-export or re-download it"
            ),
            InputError::Unsupported(what) => write!(
                f,
                "{what} are not supported; use PNG (8 or 16 bits) or JPEG (RGB, RGBA, grey or \
                 grey+alpha)"
            ),
            InputError::Empty([w, h]) => write!(
                f,
                "the image is {w}x{h} pixels: empty; give an image of at least 1x1"
            ),
            InputError::TooLarge(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for InputError {}

/// A frame's RGBA samples, rows packed: `width × height × 4` of them.
#[derive(Debug, PartialEq)]
pub enum Samples {
    /// 8 bits a sample (8-bit files and JPEGs).
    Rgba8(Vec<u8>),
    /// 16 bits a sample (16-bit PNGs), kept at full precision through the pipeline.
    Rgba16(Vec<u16>),
}

impl Samples {
    /// Bits a sample.
    pub fn bits(&self) -> u32 {
        match self {
            Samples::Rgba8(_) => 8,
            Samples::Rgba16(_) => 16,
        }
    }
}

/// A decoded frame, upright.
#[derive(Debug)]
pub struct Decoded {
    /// Width and height.
    pub size: [u32; 2],
    /// RGBA, 8 or 16 bits a sample as the file had.
    pub samples: Samples,
    /// Its colour profile, EXIF and XMP, orientation reset to upright.
    pub meta: Metadata,
    /// What the user should know about the file (a JPEG without its end marker, metadata
    /// that could not be read, an EXIF orientation outside 1 to 8, an animated PNG of which
    /// one image was used).
    pub warning: Option<String>,
}

impl Decoded {
    /// Adds `warning` (if any) to what the user is told about the file.
    pub(crate) fn warn(&mut self, warning: Option<String>) {
        self.warning = match (self.warning.take(), warning) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
    }
}

thread_local! {
    static DECODING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is inside [`decode`]: a panic hook stays quiet for panics there, which
/// `decode` turns into [`InputError::Corrupt`] (the tool and the fuzz target install such a
/// hook, see [`quiet_decoder_panics`]).
pub fn decoding() -> bool {
    DECODING.with(Cell::get)
}

/// Wraps the current panic hook so that panics inside [`decode`] print nothing: `decode`
/// reports them as errors. Other panics go to the previous hook (which may abort, as
/// libFuzzer's does).
pub fn quiet_decoder_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !decoding() {
            previous(info);
        }
    }));
}

/// Marks this thread as decoding until dropped (also when unwinding).
struct Decoding;

impl Decoding {
    fn start() -> Self {
        DECODING.with(|d| d.set(true));
        Decoding
    }
}

impl Drop for Decoding {
    fn drop(&mut self) {
        DECODING.with(|d| d.set(false));
    }
}

/// Decodes an RGB, RGBA, grey or grey+alpha (or palette) PNG of 8 or 16 bits, or a JPEG,
/// recognised by its content, into upright RGBA8 or RGBA16 as the file's depth (grey expanded,
/// EXIF orientation applied). A file that stops
/// before its end marker is refused as cut short, except a JPEG whose data is whole and only
/// the marker is missing, which is decoded with a warning. The header's size is checked against `limits`
/// before the pixels are decoded, and the decoder's allocations are capped to what such a frame
/// needs.
///
/// A panic in the decoders (zune-jpeg 0.5.15's AVX2 IDCT panics on some damaged JPEGs; see
/// `fuzz/corpus/image_input/crash-zune-jpeg-avx2-idct.jpg`) is caught and reported as a
/// damaged image.
///
/// # Errors
/// [`InputError`] saying what is wrong with the bytes; never panics on any input.
pub fn decode<R: BufRead + Seek>(reader: R, limits: &InputLimits) -> Result<Decoded, InputError> {
    let _decoding = Decoding::start();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decode_inner(reader, limits)
    }))
    .unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(InputError::Corrupt(format!("the decoder failed: {why}")))
    })
}

fn decode_inner<R: BufRead + Seek>(
    mut reader: R,
    limits: &InputLimits,
) -> Result<Decoded, InputError> {
    if reader
        .fill_buf()
        .map_err(InputError::Unreadable)?
        .is_empty()
    {
        return Err(InputError::Corrupt("the file is empty: 0 bytes".into()));
    }
    let reader = ImageReader::new(reader)
        .with_guessed_format()
        .map_err(InputError::Unreadable)?;
    let format = match reader.format() {
        Some(f @ (ImageFormat::Png | ImageFormat::Jpeg)) => f,
        Some(other) => return Err(InputError::Unsupported(format!("{other:?} images"))),
        None => return Err(InputError::NotAnImage),
    };
    let mut inner = reader.into_inner();
    if format == ImageFormat::Png {
        let chunks = container::png_is_whole(&mut inner).map_err(InputError::Corrupt)?;
        let mut decoded = decode_pixels(inner, format, limits)?;
        decoded.warn(chunks.animation_warning());
        return Ok(decoded);
    }
    if container::jpeg_is_whole(&mut inner)? == container::JpegEnd::InScan {
        return unended::decode_without_end(inner, limits);
    }
    decode_pixels(inner, format, limits)
}

/// Decodes the pixels of a whole PNG or JPEG (`format`) in `inner`.
pub(crate) fn decode_pixels<R: BufRead + Seek>(
    inner: R,
    format: ImageFormat,
    limits: &InputLimits,
) -> Result<Decoded, InputError> {
    let mut reader = ImageReader::with_format(inner, format);
    let mut caps = image::Limits::default();
    caps.max_alloc = Some(limits.max_pixels.saturating_mul(MAX_BYTES_PER_PIXEL) + DECODER_SLACK);
    reader.limits(caps);
    let mut decoder = reader.into_decoder().map_err(classify)?;
    let (w, h) = decoder.dimensions();
    check_size([w, h], limits)?;
    let color = decoder.color_type();
    // Samples per pixel, bytes per sample, and where R, G, B and alpha are among the samples
    // (alpha `None`: opaque).
    let (channels, depth, rgb, alpha) = match color {
        ColorType::Rgba8 => (4, 1, [0, 1, 2], Some(3)),
        ColorType::Rgb8 => (3, 1, [0, 1, 2], None),
        ColorType::La8 => (2, 1, [0, 0, 0], Some(1)),
        ColorType::L8 => (1, 1, [0, 0, 0], None),
        ColorType::Rgba16 => (4, 2, [0, 1, 2], Some(3)),
        ColorType::Rgb16 => (3, 2, [0, 1, 2], None),
        ColorType::La16 => (2, 2, [0, 0, 0], Some(1)),
        ColorType::L16 => (1, 2, [0, 0, 0], None),
        other => return Err(InputError::Unsupported(format!("{other:?} pixels"))),
    };
    // What the user should know about the file. Metadata that cannot be read is left out
    // with a warning, not the whole file.
    let mut warnings = Vec::new();
    let mut read = |what: &str, r: Result<Option<Vec<u8>>, ImageError>| {
        r.unwrap_or_else(|e| {
            warnings.push(format!(
                "its {what} could not be read ({e}) and was left out"
            ));
            None
        })
    };
    let meta = Metadata {
        icc: read("colour profile", decoder.icc_profile()),
        exif: read("EXIF", decoder.exif_metadata()),
        xmp: read("XMP", decoder.xmp_metadata()),
    };
    let orientation = decoder.orientation().map_err(classify)?;
    if let Some(v) = meta.invalid_orientation() {
        warnings.push(format!(
            "its EXIF orientation is {v}, not one of 1 to 8: taken as 1 (not turned) and written \
             as 1; turn the output yourself if it is not upright"
        ));
    }
    let pixels = u64::from(w) * u64::from(h);
    if decoder.total_bytes() != pixels * channels * depth {
        return Err(InputError::Corrupt(format!(
            "the header says {w}x{h} {color:?} pixels but the decoder would give {} bytes",
            decoder.total_bytes()
        )));
    }
    let mut raw = host_vec(decoder.total_bytes(), 0u8)?;
    decoder.read_image(&mut raw).map_err(classify)?;
    let layout = Layout {
        channels: channels as usize,
        rgb,
        alpha,
    };
    let size = [w, h];
    let (samples, size) = if depth == 1 {
        let (rgba, size) = upright(orientation, size, layout.rgba(raw, pixels)?)?;
        (Samples::Rgba8(rgba), size)
    } else {
        // The decoder gives 16-bit samples in native byte order.
        let mut wide = host_vec(pixels * channels, 0u16)?;
        for (v, b) in wide.iter_mut().zip(raw.chunks_exact(2)) {
            *v = u16::from_ne_bytes([b[0], b[1]]);
        }
        drop(raw);
        let (rgba, size) = upright(orientation, size, layout.rgba(wide, pixels)?)?;
        (Samples::Rgba16(rgba), size)
    };
    Ok(Decoded {
        size,
        samples,
        // Turned upright above.
        meta: meta.upright(orientation != Orientation::NoTransforms),
        warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
    })
}

/// Where a decoder's samples of one pixel hold R, G, B and alpha.
#[derive(Clone, Copy)]
struct Layout {
    channels: usize,
    rgb: [usize; 3],
    alpha: Option<usize>,
}

/// A sample type of a decoded frame.
trait Sample: Copy + Default {
    /// The opaque alpha value.
    const OPAQUE: Self;
}

impl Sample for u8 {
    const OPAQUE: Self = u8::MAX;
}

impl Sample for u16 {
    const OPAQUE: Self = u16::MAX;
}

impl Layout {
    /// `raw` (`pixels` of `channels` samples) as RGBA: grey copied into R, G and B, a missing
    /// alpha opaque.
    fn rgba<T: Sample>(self, raw: Vec<T>, pixels: u64) -> Result<Vec<T>, InputError> {
        if self.channels == 4 {
            return Ok(raw);
        }
        let mut rgba = host_vec(pixels * 4, T::default())?;
        for (px, s) in rgba
            .chunks_exact_mut(4)
            .zip(raw.chunks_exact(self.channels))
        {
            let a = self.alpha.map_or(T::OPAQUE, |a| s[a]);
            px.copy_from_slice(&[s[self.rgb[0]], s[self.rgb[1]], s[self.rgb[2]], a]);
        }
        Ok(rgba)
    }
}

/// `rgba` (`size`) turned upright, or an error naming the bytes a second frame needs.
fn upright<T: Copy + Default>(
    o: Orientation,
    size: [u32; 2],
    rgba: Vec<T>,
) -> Result<(Vec<T>, [u32; 2]), InputError> {
    let bytes = std::mem::size_of_val(rgba.as_slice());
    orient::apply(o, size, rgba).ok_or_else(|| {
        InputError::TooLarge(format!(
            "turning the image upright (EXIF orientation {}) needs {bytes} more bytes of host \
             memory, which could not be allocated; give a smaller image",
            o.to_exif(),
        ))
    })
}

/// Refuses an empty image or one past `limits`, naming the limit, its value and the flag.
fn check_size([w, h]: [u32; 2], limits: &InputLimits) -> Result<(), InputError> {
    if w == 0 || h == 0 {
        return Err(InputError::Empty([w, h]));
    }
    if w > limits.max_side || h > limits.max_side {
        return Err(InputError::TooLarge(format!(
            "the image is {w}x{h} pixels: a side longer than {} pixels, the most a frame can \
             have (vramkit_image::MAX_SIDE; no flag raises it); give a smaller image",
            limits.max_side
        )));
    }
    let pixels = u64::from(w) * u64::from(h);
    if pixels > limits.max_pixels {
        let raise = if limits.max_pixels < InputLimits::TOOL.max_pixels
            && pixels <= InputLimits::TOOL.max_pixels
        {
            format!("raise it with --max-pixels {pixels}")
        } else {
            format!(
                "--max-pixels goes up to {} (vramkit_image::MAX_FRAME_PIXELS), no further; give \
                 a smaller image",
                InputLimits::TOOL.max_pixels
            )
        };
        return Err(InputError::TooLarge(format!(
            "the image is {w}x{h} pixels: {pixels} pixels, more than the limit of {} pixels \
             (--max-pixels); {raise}",
            limits.max_pixels
        )));
    }
    Ok(())
}

/// `len` copies of `zero`, or an error saying the host could not allocate them.
fn host_vec<T: Copy>(len: u64, zero: T) -> Result<Vec<T>, InputError> {
    let refused = || {
        InputError::TooLarge(format!(
            "decoding needs {} bytes of host memory, which could not be allocated; give a \
             smaller image",
            len.saturating_mul(std::mem::size_of::<T>() as u64)
        ))
    };
    let n = usize::try_from(len).map_err(|_| refused())?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused())?;
    v.resize(n, zero);
    Ok(v)
}

/// Reads and decodes the file at `path` as [`decode`] does, refusing files larger than any
/// image within `limits` can be before reading them.
///
/// # Errors
/// The [`InputError`] and the path, as one message.
pub fn load(path: &Path, limits: &InputLimits) -> Result<Decoded, String> {
    let fail = |e: InputError| format!("{}: {e}", path.display());
    let not_regular = || {
        fail(InputError::Unsupported(
            "inputs that are not regular files (a FIFO, socket or device)".into(),
        ))
    };
    // Looked at before opening: opening a FIFO blocks until something writes to it.
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err(not_regular()),
        Err(e) => return Err(fail(InputError::Unreadable(e))),
        Ok(_) => {}
    }
    let file = File::open(path).map_err(|e| fail(InputError::Unreadable(e)))?;
    let meta = file
        .metadata()
        .map_err(|e| fail(InputError::Unreadable(e)))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    if meta.len() > limits.max_file_bytes() {
        return Err(fail(InputError::TooLarge(format!(
            "the file has {} bytes, more than any image the tool takes ({} bytes at most); \
             give a smaller image",
            meta.len(),
            limits.max_file_bytes()
        ))));
    }
    decode(BufReader::new(file), limits).map_err(fail)
}
