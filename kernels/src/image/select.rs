//! Which compiled kernel runs between which pixel formats, and the checks of a source and a
//! destination view before a launch: each image function lists its kernels by the formats they
//! read and write, and a pair of views with no kernel is refused naming the formats that have
//! one.

use super::{ImageView, PixelFormat};
use vramkit::backend::Backend;
use vramkit::Context;
use vramkit::{Error, Result};

/// A function's kernels: (source format, destination format, kernel).
pub(super) type Table<K> = [(PixelFormat, PixelFormat, K)];

/// "Rgba8 or Rgba32F": the formats of `list`, each once.
fn either(list: impl Iterator<Item = PixelFormat>) -> String {
    let mut seen: Vec<PixelFormat> = Vec::new();
    for f in list {
        if !seen.contains(&f) {
            seen.push(f);
        }
    }
    let names: Vec<String> = seen.iter().map(|f| format!("{f:?}")).collect();
    names.join(" or ")
}

/// Checks `src` and `dst` (formats `table` has a kernel for, non-empty, inside their buffers)
/// and returns the kernel for their formats.
///
/// # Errors
/// [`Error::ShapeMismatch`] naming the view that is wrong and what is accepted.
pub(super) fn pick<B: Backend, K: Copy>(
    ctx: &Context<B>,
    src: &ImageView,
    dst: &ImageView,
    table: &Table<K>,
) -> Result<K> {
    if !table.iter().any(|t| t.0 == src.format) {
        return Err(wrong_format(
            "source",
            either(table.iter().map(|t| t.0)),
            src,
        ));
    }
    check(ctx, src, "source")?;
    let from_src = || table.iter().filter(|t| t.0 == src.format);
    let Some(&(_, _, kernel)) = from_src().find(|t| t.1 == dst.format) else {
        return Err(wrong_format(
            "destination",
            either(from_src().map(|t| t.1)),
            dst,
        ));
    };
    check(ctx, dst, "destination")?;
    Ok(kernel)
}

fn wrong_format(what: &str, accepted: String, img: &ImageView) -> Error {
    Error::ShapeMismatch {
        expected: format!("{what} in {accepted}"),
        actual: format!("{:?}", img.format),
    }
}

/// Checks a view is at least 1×1, its stride at least its width, and inside its buffer.
fn check<B: Backend>(ctx: &Context<B>, img: &ImageView, what: &str) -> Result<()> {
    if img.width == 0 || img.height == 0 || img.stride < img.width {
        return Err(Error::ShapeMismatch {
            expected: format!("{what} of at least 1×1 pixels, stride ≥ width"),
            actual: format!("{}×{}, stride {}", img.width, img.height, img.stride),
        });
    }
    let have = ctx.observe().size_of(img.handle)?;
    if have < img.bytes() {
        return Err(Error::ShapeMismatch {
            expected: format!("{what} buffer of at least {} bytes", img.bytes()),
            actual: format!("{have} bytes"),
        });
    }
    Ok(())
}
