//! The tool's input path: reading a file and decoding an 8-bit PNG or JPEG (RGB, RGBA, grey or
//! grey+alpha) into an upright RGBA8 frame (EXIF orientation applied), refusing files cut short,
//! with every size checked before anything of that size is allocated.
//! The fuzz target `image_input` and `tests/fuzz_corpus.rs` include this file, so what they
//! check is what the tool runs.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek};
use std::path::Path;

use image::{ColorType, ImageDecoder, ImageError, ImageFormat, ImageReader};
use vramkit::image::{MAX_FRAME_PIXELS, MAX_SIDE};

// Beside this file whichever crate includes it (the tool, the fuzz checks).
#[path = "container.rs"]
mod container;
#[path = "orient.rs"]
mod orient;

/// Bytes a decoder may hold beyond the decoded frame (zlib window, row and scan buffers).
const DECODER_SLACK: u64 = 16 << 20;

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

    /// The most bytes a file within these limits can have: an uncompressed 8-bit RGBA frame and
    /// a fifth more for the container (PNG's stored blocks, row filters, chunks).
    pub fn max_file_bytes(&self) -> u64 {
        self.max_pixels * 4 / 5 * 6 + (1 << 20)
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
                 give 8-bit PNG or JPEG files"
            ),
            InputError::Corrupt(why) => write!(
                f,
                "a damaged or truncated image that can not be decoded ({why}); \
                 re-export or re-download it"
            ),
            InputError::Unsupported(what) => write!(
                f,
                "{what} are not supported; use 8-bit PNG or JPEG (RGB, RGBA, grey or grey+alpha)"
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

/// Maps a decoder's error onto what it means for the user.
fn classify(e: ImageError) -> InputError {
    match e {
        ImageError::Limits(l) => InputError::TooLarge(format!(
            "decoding needs more memory than the decoder's limit of 4 bytes per pixel of \
             --max-pixels allows ({l}); give a smaller image or raise --max-pixels"
        )),
        ImageError::Unsupported(u) => InputError::Unsupported(format!("images with {u}")),
        ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            InputError::Corrupt("the data ends early".into())
        }
        ImageError::IoError(io) => InputError::Unreadable(io),
        other => InputError::Corrupt(other.to_string()),
    }
}

/// A decoded frame: RGBA8, rows packed.
#[derive(Debug)]
pub struct Decoded {
    /// Width and height.
    pub size: [u32; 2],
    /// `size[0] × size[1] × 4` bytes.
    pub rgba: Vec<u8>,
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

/// Decodes an 8-bit RGB, RGBA, grey or grey+alpha (or palette) PNG or JPEG, recognised by its
/// content, into upright RGBA8 (grey expanded, EXIF orientation applied). A file that stops
/// before its end marker is refused as cut short. The header's size is checked against `limits`
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

fn decode_inner<R: BufRead + Seek>(reader: R, limits: &InputLimits) -> Result<Decoded, InputError> {
    let reader = ImageReader::new(reader)
        .with_guessed_format()
        .map_err(InputError::Unreadable)?;
    let format = match reader.format() {
        Some(f @ (ImageFormat::Png | ImageFormat::Jpeg)) => f,
        Some(other) => return Err(InputError::Unsupported(format!("{other:?} images"))),
        None => return Err(InputError::NotAnImage),
    };
    let mut inner = reader.into_inner();
    match format {
        ImageFormat::Png => container::png_is_whole(&mut inner),
        _ => container::jpeg_is_whole(&mut inner),
    }
    .map_err(InputError::Corrupt)?;
    let mut reader = ImageReader::with_format(inner, format);
    let mut caps = image::Limits::default();
    caps.max_alloc = Some(limits.max_pixels.saturating_mul(4) + DECODER_SLACK);
    reader.limits(caps);
    let mut decoder = reader.into_decoder().map_err(classify)?;
    let (w, h) = decoder.dimensions();
    check_size([w, h], limits)?;
    let color = decoder.color_type();
    // Samples per pixel and where R, G, B and alpha are among them (alpha `None`: opaque).
    let (channels, rgb, alpha) = match color {
        ColorType::Rgba8 => (4, [0, 1, 2], Some(3)),
        ColorType::Rgb8 => (3, [0, 1, 2], None),
        ColorType::La8 => (2, [0, 0, 0], Some(1)),
        ColorType::L8 => (1, [0, 0, 0], None),
        ColorType::L16 | ColorType::La16 | ColorType::Rgb16 | ColorType::Rgba16 => {
            return Err(InputError::Unsupported(format!(
                "16-bit images ({color:?} pixels)"
            )))
        }
        other => return Err(InputError::Unsupported(format!("{other:?} pixels"))),
    };
    let orientation = decoder.orientation().map_err(classify)?;
    let pixels = u64::from(w) * u64::from(h);
    if decoder.total_bytes() != pixels * channels as u64 {
        return Err(InputError::Corrupt(format!(
            "the header says {w}x{h} {color:?} pixels but the decoder would give {} bytes",
            decoder.total_bytes()
        )));
    }
    let mut raw = host_bytes(decoder.total_bytes())?;
    decoder.read_image(&mut raw).map_err(classify)?;
    let rgba = if channels == 4 {
        raw
    } else {
        let mut rgba = host_bytes(pixels * 4)?;
        for (px, s) in rgba.chunks_exact_mut(4).zip(raw.chunks_exact(channels)) {
            px.copy_from_slice(&[s[rgb[0]], s[rgb[1]], s[rgb[2]], alpha.map_or(255, |a| s[a])]);
        }
        rgba
    };
    let (rgba, size) = orient::apply(orientation, [w, h], rgba).ok_or_else(|| {
        InputError::TooLarge(format!(
            "turning the image upright (EXIF orientation {}) needs {} more bytes of host \
             memory, which could not be allocated; give a smaller image",
            orientation.to_exif(),
            pixels * 4
        ))
    })?;
    Ok(Decoded { size, rgba })
}

/// Refuses an empty image or one past `limits`, naming the limit, its value and the flag.
fn check_size([w, h]: [u32; 2], limits: &InputLimits) -> Result<(), InputError> {
    if w == 0 || h == 0 {
        return Err(InputError::Empty([w, h]));
    }
    if w > limits.max_side || h > limits.max_side {
        return Err(InputError::TooLarge(format!(
            "the image is {w}x{h} pixels: a side longer than {} pixels, the most a frame can \
             have (vramkit::image::MAX_SIDE; no flag raises it); give a smaller image",
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
                "--max-pixels goes up to {} (vramkit::image::MAX_FRAME_PIXELS), no further; give \
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

/// `len` zero bytes, or an error saying the host could not allocate them.
fn host_bytes(len: u64) -> Result<Vec<u8>, InputError> {
    let refused = || {
        InputError::TooLarge(format!(
            "decoding needs {len} bytes of host memory, which could not be allocated; give a \
             smaller image"
        ))
    };
    let n = usize::try_from(len).map_err(|_| refused())?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused())?;
    v.resize(n, 0);
    Ok(v)
}

/// Reads and decodes the file at `path` as [`decode`] does, refusing files larger than any
/// image within `limits` can be before reading them.
///
/// # Errors
/// The [`InputError`] and the path, as one message.
pub fn load(path: &Path, limits: &InputLimits) -> Result<Decoded, String> {
    let fail = |e: InputError| format!("{}: {e}", path.display());
    let file = File::open(path).map_err(|e| fail(InputError::Unreadable(e)))?;
    let meta = file
        .metadata()
        .map_err(|e| fail(InputError::Unreadable(e)))?;
    if !meta.is_file() {
        return Err(fail(InputError::Unsupported(
            "inputs that are not regular files".into(),
        )));
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
