//! Colour profiles: the pipeline's `linear` and `srgb` use the sRGB curve, so a frame whose
//! profile has another curve (Adobe RGB's gamma 2.2, ProPhoto's 1.8) is re-encoded, at 16 bits,
//! with the same primaries and the sRGB curve before the chain, and back to its own curve after
//! it: `linear` is then the profile's own linear light, and the output, tagged with the input's
//! profile, shows the colours a colour-managed viewer shows for the input. Profiles with the
//! sRGB curve (sRGB itself, Display-P3) need nothing. Only RGB profiles are carried into the
//! RGB outputs; a grey or CMYK profile is left out, with a warning.

use std::sync::Arc;

use moxcms::{ColorProfile, DataColorSpace, Layout, TransformExecutor, TransformOptions};

use crate::input::metadata::Metadata;
use crate::input::Samples;

type Transform = Arc<dyn TransformExecutor<u16> + Send + Sync>;

/// The conversions between a profile's encoding and the working one (its primaries, the sRGB
/// curve).
pub struct Working {
    into: Transform,
    back: Transform,
}

/// What the profile of `meta` needs: `Ok(None)` where the pipeline works in it as it is (no
/// profile, or one with the sRGB curve), `Ok(Some)` the conversions where its curve differs.
/// A profile that is not RGB, or that cannot be read, is removed from `meta` and said so in
/// the `String`.
pub fn working(meta: &mut Metadata) -> (Option<Working>, Option<String>) {
    let Some(icc) = &meta.icc else {
        return (None, None);
    };
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
    if !profile.is_matrix_shaper() {
        // A LUT-based RGB profile: carried, and the pipeline's curve taken as it is.
        return (None, None);
    }
    let srgb = ColorProfile::new_srgb();
    let mut work = profile.clone();
    work.red_trc = srgb.red_trc.clone();
    work.green_trc = srgb.green_trc.clone();
    work.blue_trc = srgb.blue_trc.clone();
    let options = TransformOptions {
        prefer_fixed_point: false,
        ..TransformOptions::default()
    };
    let (Ok(into), Ok(back)) = (
        profile.create_transform_16bit(Layout::Rgba, &work, Layout::Rgba, options),
        work.create_transform_16bit(Layout::Rgba, &profile, Layout::Rgba, options),
    ) else {
        return (
            None,
            Some("its colour profile's curves cannot be converted: the sRGB curve is used".into()),
        );
    };
    // The sRGB curve already (within a 16-bit step or two): nothing to do.
    let ramp: Vec<u16> = (0..=256u32)
        .flat_map(|i| {
            let v = (i * 65_535 / 256) as u16;
            [v, v, v, u16::MAX]
        })
        .collect();
    let mut out = vec![0u16; ramp.len()];
    if into.transform(&ramp, &mut out).is_ok()
        && ramp.iter().zip(&out).all(|(a, b)| a.abs_diff(*b) <= 2)
    {
        return (None, None);
    }
    (Some(Working { into, back }), None)
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

fn run(t: &Transform, src: &[u16]) -> Result<Vec<u16>, String> {
    let mut dst = Vec::new();
    dst.try_reserve_exact(src.len()).map_err(|_| no_memory())?;
    dst.resize(src.len(), 0);
    t.transform(src, &mut dst)
        .map_err(|e| format!("the colour conversion failed: {e:?}"))?;
    Ok(dst)
}

impl Working {
    /// The frame in the working encoding, 16 bits a sample.
    pub fn to_working(&self, samples: &Samples) -> Result<Vec<u16>, String> {
        run(&self.into, &widen(samples)?)
    }

    /// A frame of the working encoding back in the profile's, at the bits of the input
    /// (`bits`: 8 or 16).
    pub fn back(&self, working: &[u16], bits: u32) -> Result<Samples, String> {
        let own = run(&self.back, working)?;
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
