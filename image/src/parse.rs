//! Parsing operation chains, strictly: every token is either understood or refused with an
//! error that names it and says what is accepted.
//!
//! The grammar is in [`parse_chain`]'s documentation.

use std::str::FromStr;

use super::ops::{self, size_problem, Op};
use vramkit::{Error, Result};
use vramkit_kernels::image::ResizeFilter;

const KNOWN: &str = "known operations: linear, srgb, luma, blur:sigma=S, box:radius=R, \
     resize:WxH[:bilinear|:area], adjust:brightness=B;contrast=C;gamma=G";
const BLUR_USAGE: &str = "blur takes one parameter, sigma=S, e.g. blur:sigma=3";
const BOX_USAGE: &str = "box takes one parameter, radius=R, e.g. box:radius=2";
const ADJUST_USAGE: &str = "adjust takes brightness=B, contrast=C and gamma=G (each optional, \
     separated by `;`), e.g. adjust:contrast=1.2;gamma=2.2";
const RESIZE_USAGE: &str =
    "resize takes a size and an optional filter, e.g. resize:1920x1080 or resize:1920x1080:area";
const SIZE: &str = "a size is WIDTHxHEIGHT in whole pixels, e.g. resize:1920x1080";
const FILTER: &str = "the resize filter is `bilinear` (the default) or `area`";

/// `token`, and the operation it is in when that is longer.
fn at(token: &str, op: &str) -> String {
    if token == op {
        format!("`{token}`")
    } else {
        format!("`{token}` in `{op}`")
    }
}

fn err(name: &'static str, value: String, reason: &'static str) -> Error {
    Error::InvalidParameter {
        name,
        value,
        reason,
    }
}

/// The `key=value` parameters of `op` (`args` is what follows its first `:`), each key one of
/// `keys`, at most once.
fn params<'a>(
    op: &'a str,
    args: &'a str,
    keys: &[&'static str],
    usage: &'static str,
) -> Result<Vec<(&'static str, &'a str)>> {
    let mut found: Vec<(&'static str, &str)> = Vec::new();
    for part in args.split([';', ':']) {
        let part = part.trim();
        if part.is_empty() {
            return Err(err("parameter", at(args, op), usage));
        }
        let Some((key, value)) = part.split_once('=') else {
            return Err(err("parameter", at(part, op), usage));
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(&key) = keys.iter().find(|&&k| k == key) else {
            return Err(err("parameter", at(key, op), usage));
        };
        if found.iter().any(|&(k, _)| k == key) {
            return Err(err(
                "parameter",
                at(key, op),
                "it is given twice; give each parameter once",
            ));
        }
        if value.is_empty() {
            return Err(err(
                "parameter",
                at(part, op),
                "a value is expected after `=`, e.g. blur:sigma=3",
            ));
        }
        found.push((key, value));
    }
    Ok(found)
}

/// The value of the one parameter `key` of `op`, which is required.
fn only<'a>(op: &'a str, args: &'a str, key: &'static str, usage: &'static str) -> Result<&'a str> {
    let found = params(op, args, &[key], usage)?;
    found
        .first()
        .map(|&(_, v)| v)
        .ok_or_else(|| err("operation", at(op, op), usage))
}

/// A finite decimal that `ok` accepts; `what` says what is accepted.
fn float(
    op: &str,
    key: &'static str,
    v: &str,
    ok: fn(f32) -> bool,
    what: &'static str,
) -> Result<f32> {
    match v.parse::<f32>() {
        Ok(x) if ok(x) => Ok(x),
        _ => Err(err(key, at(v, op), what)),
    }
}

/// A whole number of decimal digits (`None` when it is not; `u64::MAX` when it overflows).
fn whole(v: &str) -> Option<u64> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse().unwrap_or(u64::MAX))
}

fn resize(op: &str, args: &str) -> Result<Op> {
    let mut parts = args.split(':').map(str::trim);
    let size = parts.next().unwrap_or_default();
    let filter = match parts.next() {
        None | Some("bilinear") => ResizeFilter::Bilinear,
        Some("area") => ResizeFilter::Area,
        Some(other) => return Err(err("resize filter", at(other, op), FILTER)),
    };
    if let Some(extra) = parts.next() {
        return Err(err("operation argument", at(extra, op), RESIZE_USAGE));
    }
    let (w, h) = size
        .split_once('x')
        .ok_or_else(|| err("resize size", at(size, op), SIZE))?;
    let (w, h) = (w.trim(), h.trim());
    let (Some(width), Some(height)) = (whole(w), whole(h)) else {
        return Err(err("resize size", at(size, op), SIZE));
    };
    let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let (width, height) = (clamp(width), clamp(height));
    match size_problem([width, height]) {
        Some((0, why)) => Err(err("resize width", at(w, op), why)),
        Some((1, why)) => Err(err("resize height", at(h, op), why)),
        Some((_, why)) => Err(err("resize size", at(size, op), why)),
        None => Ok(Op::Resize {
            width,
            height,
            filter,
        }),
    }
}

impl FromStr for Op {
    type Err = Error;

    /// One operation: `linear`, `srgb`, `luma`, `blur:sigma=S`, `box:radius=R`,
    /// `resize:WxH[:bilinear|:area]`, `adjust:brightness=B;contrast=C;gamma=G` (see the module
    /// documentation for the grammar).
    fn from_str(s: &str) -> Result<Self> {
        let op = s.trim();
        let (name, args) = match op.split_once(':') {
            Some((name, args)) => (name.trim(), Some(args)),
            None => (op, None),
        };
        let need = |usage: &'static str| args.ok_or_else(|| err("operation", at(op, op), usage));
        Ok(match name {
            "linear" | "srgb" | "luma" => {
                if let Some(args) = args {
                    return Err(err(
                        "operation argument",
                        at(args, op),
                        "linear, srgb and luma take no arguments; write the name alone",
                    ));
                }
                match name {
                    "linear" => Op::Linear,
                    "srgb" => Op::Srgb,
                    _ => Op::Luma,
                }
            }
            "blur" => {
                let v = only(op, need(BLUR_USAGE)?, "sigma", BLUR_USAGE)?;
                let sigma = float(op, "sigma", v, ops::sigma_ok, ops::SIGMA)?;
                Op::Blur { sigma }
            }
            "box" => {
                let v = only(op, need(BOX_USAGE)?, "radius", BOX_USAGE)?;
                let radius = whole(v)
                    .and_then(|r| u32::try_from(r).ok())
                    .filter(|&r| ops::radius_ok(r))
                    .ok_or_else(|| err("radius", at(v, op), ops::RADIUS))?;
                Op::BoxBlur { radius }
            }
            "resize" => resize(op, need(RESIZE_USAGE)?)?,
            "adjust" => {
                let keys = ["brightness", "contrast", "gamma"];
                let p = match args {
                    Some(args) => params(op, args, &keys, ADJUST_USAGE)?,
                    None => Vec::new(),
                };
                let get = |key: &'static str, default: f32, ok: fn(f32) -> bool, what| {
                    p.iter()
                        .find(|&&(k, _)| k == key)
                        .map_or(Ok(default), |&(_, v)| float(op, key, v, ok, what))
                };
                Op::Adjust {
                    brightness: get("brightness", 0.0, ops::adjust_ok, ops::BRIGHTNESS)?,
                    contrast: get("contrast", 1.0, ops::adjust_ok, ops::CONTRAST)?,
                    gamma: get("gamma", 1.0, ops::gamma_ok, ops::GAMMA)?,
                }
            }
            _ => return Err(err("operation", at(name, op), KNOWN)),
        })
    }
}

/// Parses a comma-separated chain, e.g. `linear,blur:sigma=3,resize:1920x1080,srgb`, strictly:
/// unknown operations and parameters, repeated parameters, missing values, numbers out of
/// range, malformed sizes, trailing text and empty chains or operations are refused.
///
/// ```text
/// chain  = op ("," op)*
/// op     = "linear" | "srgb" | "luma"
///        | "blur:" "sigma=" number                   0 < number ≤ 341
///        | "box:" "radius=" whole                    1 ≤ whole ≤ 1024
///        | "resize:" whole "x" whole [":bilinear" | ":area"]
///        | "adjust" [":" param (";" param)*]
/// param  = "brightness=" number | "contrast=" number | "gamma=" number
/// ```
///
/// Spaces around tokens are ignored and `:` also separates `adjust`'s parameters; numbers are
/// finite decimals within the ranges [`Op`]'s fields document (a resize's sides at most
/// [`MAX_SIDE`](super::MAX_SIDE), its pixels at most
/// [`MAX_FRAME_PIXELS`](super::MAX_FRAME_PIXELS)); each parameter is given at most once.
///
/// # Errors
/// [`Error::InvalidParameter`] whose value names the offending token (and its operation) and
/// whose reason says what is accepted.
///
/// ```
/// let chain = vramkit_image::parse_chain("linear,blur:sigma=3,resize:1920x1080,srgb")?;
/// assert_eq!(chain.len(), 4);
/// assert!(vramkit_image::parse_chain("linear:foo=1").is_err());
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn parse_chain(s: &str) -> Result<Vec<Op>> {
    if s.trim().is_empty() {
        return Err(err(
            "operation chain",
            format!("`{s}`"),
            "the chain is empty; give at least one operation, e.g. linear,blur:sigma=3,srgb",
        ));
    }
    s.split(',')
        .map(|op| {
            if op.trim().is_empty() {
                return Err(err(
                    "operation chain",
                    format!("`{s}`"),
                    "an operation is empty (a doubled, leading or trailing comma); \
                     separate operations with single commas",
                ));
            }
            op.parse()
        })
        .collect()
}

/// Writes a chain as [`parse_chain`] reads it.
///
/// ```
/// use vramkit_image::{format_chain, parse_chain};
/// let text = "linear,resize:640x480:area,adjust:brightness=0.1;contrast=1;gamma=2.2";
/// assert_eq!(format_chain(&parse_chain(text)?), text);
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn format_chain(ops: &[Op]) -> String {
    let texts: Vec<String> = ops.iter().map(Op::to_string).collect();
    texts.join(",")
}
