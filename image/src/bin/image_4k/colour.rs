//! Colour profiles: the pipeline's `linear` and `srgb` use the sRGB curve, so a frame whose
//! profile has another curve (Adobe RGB's gamma 2.2, ProPhoto's 1.8) is re-encoded, at 16 bits,
//! with the same primaries and the sRGB curve before the chain, and back to its own curve after
//! it (per channel, through 16-bit tables computed in f64 from the profile's curves, which
//! moxcms reads): `linear` is then the profile's own linear light, and the output, tagged with the input's
//! profile, shows the colours a colour-managed viewer shows for the input. Profiles with the
//! sRGB curve (sRGB itself, Display-P3) need nothing. Only RGB profiles are carried into the
//! RGB outputs; a grey or CMYK profile is left out, with a warning.

use std::sync::{Arc, Mutex};

use moxcms::{ColorProfile, DataColorSpace, ToneReprCurve};

use crate::input::metadata::Metadata;
use crate::input::Samples;

/// A profile's bytes and what it needs (`None`: nothing).
type Made = (Vec<u8>, Option<Arc<Working>>);

/// The conversions made so far, by profile: a folder's photos mostly share one.
static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// One channel's conversion in both directions, a 16-bit code to a 16-bit code.
struct Tables {
    into: Vec<u16>,
    back: Vec<u16>,
}

/// The conversions between a profile's encoding and the working one (its primaries, the sRGB
/// curve): the primaries are the same, so each channel converts on its own, through its
/// curve, in f64.
pub struct Working {
    channels: [Arc<Tables>; 3],
}

/// A tone curve as a function on 0..=1 (ICC `curv` and `para`), `None` for a kind not known.
fn curve(trc: &ToneReprCurve) -> Option<Box<dyn Fn(f64) -> f64>> {
    Some(match trc {
        ToneReprCurve::Lut(t) if t.is_empty() => Box::new(|x| x),
        ToneReprCurve::Lut(t) if t.len() == 1 => {
            let g = f64::from(t[0]) / 256.0;
            Box::new(move |x: f64| x.powf(g))
        }
        ToneReprCurve::Lut(t) => {
            let t: Vec<f64> = t.iter().map(|&v| f64::from(v) / 65_535.0).collect();
            Box::new(move |x: f64| {
                let at = x.clamp(0.0, 1.0) * (t.len() - 1) as f64;
                let i = (at.floor() as usize).min(t.len() - 2);
                t[i] + (t[i + 1] - t[i]) * (at - i as f64)
            })
        }
        ToneReprCurve::Parametric(p) => {
            let p: Vec<f64> = p.iter().map(|&v| f64::from(v)).collect();
            let pow = |b: f64, g: f64| if b > 0.0 { b.powf(g) } else { 0.0 };
            match p.len() {
                1 => Box::new(move |x: f64| pow(x, p[0])),
                3 => Box::new(move |x: f64| {
                    if x >= -p[2] / p[1] {
                        pow(p[1] * x + p[2], p[0])
                    } else {
                        0.0
                    }
                }),
                4 => Box::new(move |x: f64| {
                    if x >= -p[2] / p[1] {
                        pow(p[1] * x + p[2], p[0]) + p[3]
                    } else {
                        p[3]
                    }
                }),
                5 => Box::new(move |x: f64| {
                    if x >= p[4] {
                        pow(p[1] * x + p[2], p[0])
                    } else {
                        p[3] * x
                    }
                }),
                7 => Box::new(move |x: f64| {
                    if x >= p[4] {
                        pow(p[1] * x + p[2], p[0]) + p[5]
                    } else {
                        p[3] * x + p[6]
                    }
                }),
                _ => return None,
            }
        }
    })
}

fn srgb_decode(v: f64) -> f64 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

fn srgb_encode(v: f64) -> f64 {
    if v <= 0.003_130_8 {
        v * 12.92
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    }
}

fn code(v: f64) -> u16 {
    (v.clamp(0.0, 1.0) * 65_535.0).round() as u16
}

/// The tables of one channel whose curve is `f` (increasing): into the working encoding
/// (`srgb_encode(f(x))`), and back (`f⁻¹(srgb_decode(y))`, by bisection).
fn tables(f: &dyn Fn(f64) -> f64) -> Tables {
    let into = (0..=u16::MAX)
        .map(|v| code(srgb_encode(f(f64::from(v) / 65_535.0))))
        .collect();
    let back = (0..=u16::MAX)
        .map(|w| {
            let target = srgb_decode(f64::from(w) / 65_535.0);
            let (mut lo, mut hi) = (0.0f64, 1.0f64);
            for _ in 0..30 {
                let mid = 0.5 * (lo + hi);
                if f(mid) < target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            code(0.5 * (lo + hi))
        })
        .collect();
    Tables { into, back }
}

/// What the profile of `meta` needs: `None` where the pipeline works in it as it is (no
/// profile, one with the sRGB curve, or a LUT-based one), the conversions where its curves
/// differ. A profile that is not RGB, or that cannot be read, is removed from `meta` and said
/// so in the `String`.
pub fn working(meta: &mut Metadata) -> (Option<Arc<Working>>, Option<String>) {
    let Some(icc) = &meta.icc else {
        return (None, None);
    };
    let made = |w: Option<Arc<Working>>| {
        let mut m = MADE.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() < 16 {
            m.push((icc.clone(), w.clone()));
        }
        w
    };
    if let Some((_, w)) = MADE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(p, _)| p == icc)
    {
        return (w.clone(), None);
    }
    let profile = match ColorProfile::new_from_slice(icc) {
        Ok(p) => p,
        Err(e) => {
            meta.icc = None;
            return (
                None,
                Some(format!(
                    "its colour profile cannot be read ({e:?}): left out, the pixels taken as sRGB"
                )),
            );
        }
    };
    if profile.color_space != DataColorSpace::Rgb {
        meta.icc = None;
        return (
            None,
            Some(format!(
                "its {:?} colour profile does not describe the RGB output: left out",
                profile.color_space
            )),
        );
    }
    let (Some(rt), Some(gt), Some(bt)) = (&profile.red_trc, &profile.green_trc, &profile.blue_trc)
    else {
        // A LUT-based RGB profile: carried, and the pipeline's curve taken as it is.
        return (made(None), None);
    };
    let (Some(r), Some(g), Some(b)) = (curve(rt), curve(gt), curve(bt)) else {
        return (
            None,
            Some(
                "its colour profile's curves are of a kind not known: the sRGB curve is used"
                    .into(),
            ),
        );
    };
    // The sRGB curve already (within a 16-bit step or two): nothing to do.
    let same = [&r, &g, &b].iter().all(|f| {
        (0..=256u32).all(|i| {
            let x = f64::from(i) / 256.0;
            (f(x) - srgb_decode(x)).abs() * 65_535.0 <= 2.0
        })
    });
    if same {
        return (made(None), None);
    }
    // Most profiles give the three channels one curve: its tables are made once.
    let red = Arc::new(tables(&*r));
    let green = if gt == rt {
        red.clone()
    } else {
        Arc::new(tables(&*g))
    };
    let blue = match () {
        () if bt == rt => red.clone(),
        () if bt == gt => green.clone(),
        () => Arc::new(tables(&*b)),
    };
    let w = Working {
        channels: [red, green, blue],
    };
    (made(Some(Arc::new(w))), None)
}

/// RGBA samples widened to 16 bits (`v · 257`).
fn widen(samples: &Samples) -> Result<Vec<u16>, String> {
    let mut v = Vec::new();
    match samples {
        Samples::Rgba8(s) => {
            v.try_reserve_exact(s.len()).map_err(|_| no_memory())?;
            v.extend(s.iter().map(|&x| u16::from(x) * 257));
        }
        Samples::Rgba16(s) => {
            v.try_reserve_exact(s.len()).map_err(|_| no_memory())?;
            v.extend_from_slice(s);
        }
    }
    Ok(v)
}

fn no_memory() -> String {
    "no host memory for the frame's copy in the working colour space".into()
}

impl Working {
    /// `src` (RGBA) through each channel's table (`into` or back), alpha as it is.
    fn map(&self, src: &mut [u16], into: bool) {
        for px in src.chunks_exact_mut(4) {
            for (c, t) in self.channels.iter().enumerate() {
                let table = if into { &t.into } else { &t.back };
                px[c] = table[usize::from(px[c])];
            }
        }
    }

    /// The frame in the working encoding, 16 bits a sample.
    pub fn to_working(&self, samples: &Samples) -> Result<Vec<u16>, String> {
        let mut wide = widen(samples)?;
        self.map(&mut wide, true);
        Ok(wide)
    }

    /// A frame of the working encoding back in the profile's, at the bits of the input
    /// (`bits`: 8 or 16).
    pub fn back(&self, working: &[u16], bits: u32) -> Result<Samples, String> {
        let mut own = Vec::new();
        own.try_reserve_exact(working.len())
            .map_err(|_| no_memory())?;
        own.extend_from_slice(working);
        self.map(&mut own, false);
        if bits == 16 {
            return Ok(Samples::Rgba16(own));
        }
        Ok(Samples::Rgba8(
            own.iter()
                .map(|&s| ((u32::from(s) * 255 + 32_767) / 65_535) as u8)
                .collect(),
        ))
    }
}
