//! Alpha meeting a format without it (JPEG): each pixel composited over an opaque background
//! colour, in the encoded sRGB values as image editors flatten (`c·a + b·(1 − a)`, straight
//! alpha), so that the colour hidden under transparent pixels never shows.

use crate::input::Samples;

/// The background when `--background` is not given.
pub const WHITE: [u8; 3] = [255; 3];

/// The colour names `--background` takes (any case), with CSS's values: the sixteen basic
/// colours, `grey` beside `gray`, `cyan` and `magenta` beside `aqua` and `fuchsia`. As in CSS,
/// `green` is #008000 and `lime` is #00ff00.
pub const NAMED: [(&str, [u8; 3]); 19] = [
    ("white", WHITE),
    ("black", [0, 0, 0]),
    ("grey", [128, 128, 128]),
    ("gray", [128, 128, 128]),
    ("silver", [192, 192, 192]),
    ("red", [255, 0, 0]),
    ("maroon", [128, 0, 0]),
    ("green", [0, 128, 0]),
    ("lime", [0, 255, 0]),
    ("blue", [0, 0, 255]),
    ("navy", [0, 0, 128]),
    ("yellow", [255, 255, 0]),
    ("olive", [128, 128, 0]),
    ("cyan", [0, 255, 255]),
    ("aqua", [0, 255, 255]),
    ("teal", [0, 128, 128]),
    ("magenta", [255, 0, 255]),
    ("fuchsia", [255, 0, 255]),
    ("purple", [128, 0, 128]),
];

/// Parses `--background`: `#RRGGBB`, `RRGGBB`, `#RGB`, `RGB` or a name of [`NAMED`], any case.
///
/// # Errors
/// The forms a colour may take, and every name.
pub fn parse_colour(s: &str) -> Result<[u8; 3], String> {
    let lower = s.trim().to_ascii_lowercase();
    if let Some((_, c)) = NAMED.iter().find(|(name, _)| *name == lower) {
        return Ok(*c);
    }
    let hex = lower.strip_prefix('#').unwrap_or(&lower);
    let digits: Option<Vec<u8>> = hex
        .chars()
        .map(|c| c.to_digit(16).map(|d| d as u8))
        .collect();
    match digits.as_deref() {
        Some(&[r1, r0, g1, g0, b1, b0]) => Ok([r1 * 16 + r0, g1 * 16 + g0, b1 * 16 + b0]),
        Some(&[r, g, b]) => Ok([r * 17, g * 17, b * 17]),
        _ => {
            let names: Vec<&str> = NAMED.iter().map(|(name, _)| *name).collect();
            Err(format!(
                "`{s}` is not a colour: give #RRGGBB (#ff8000), RRGGBB, #RGB (#f80), or a name \
                 (any case): {}",
                names.join(", ")
            ))
        }
    }
}

/// 8-bit RGB of `samples` (RGBA) composited over `background`, and whether any pixel was not
/// opaque. 16-bit samples are composited at 16 bits, then rounded to 8.
///
/// # Errors
/// The host could not allocate the RGB copy.
pub fn over(samples: &Samples, background: [u8; 3]) -> Result<(Vec<u8>, bool), String> {
    let pixels = match samples {
        Samples::Rgba8(v) => v.len() / 4,
        Samples::Rgba16(v) => v.len() / 4,
    };
    let mut rgb = Vec::new();
    rgb.try_reserve_exact(pixels * 3)
        .map_err(|_| "no host memory for the RGB copy JPEG needs".to_string())?;
    let mut translucent = false;
    match samples {
        Samples::Rgba8(v) => {
            for px in v.chunks_exact(4) {
                let a = u32::from(px[3]);
                translucent |= a < 255;
                for (c, b) in px[..3].iter().zip(background) {
                    let mixed = u32::from(*c) * a + u32::from(b) * (255 - a);
                    rgb.push(((mixed + 127) / 255) as u8);
                }
            }
        }
        Samples::Rgba16(v) => {
            for px in v.chunks_exact(4) {
                let a = u64::from(px[3]);
                translucent |= a < 65_535;
                for (c, b) in px[..3].iter().zip(background) {
                    let mixed = u64::from(*c) * a + u64::from(b) * 257 * (65_535 - a);
                    let wide = (mixed + 32_767) / 65_535;
                    rgb.push(((wide * 255 + 32_767) / 65_535) as u8);
                }
            }
        }
    }
    Ok((rgb, translucent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_parse_or_say_what_a_colour_is() {
        assert_eq!(parse_colour("#ff8000"), Ok([255, 128, 0]));
        assert_eq!(parse_colour("FF8000"), Ok([255, 128, 0]));
        assert_eq!(parse_colour("#f80"), Ok([255, 136, 0]));
        assert_eq!(parse_colour("Black"), Ok([0, 0, 0]));
        for bad in ["", "#ff80", "#gg0000", "blue-ish", "#ff80001"] {
            assert!(parse_colour(bad).unwrap_err().contains("#RRGGBB"), "{bad}");
        }
    }

    #[test]
    fn common_colour_names_parse_in_any_case() {
        for (name, want) in [
            ("white", [255, 255, 255]),
            ("BLACK", [0, 0, 0]),
            ("Grey", [128, 128, 128]),
            ("gray", [128, 128, 128]),
            ("red", [255, 0, 0]),
            ("Green", [0, 128, 0]),
            ("lime", [0, 255, 0]),
            ("BLUE", [0, 0, 255]),
            ("Yellow", [255, 255, 0]),
            ("cyan", [0, 255, 255]),
            ("Magenta", [255, 0, 255]),
        ] {
            assert_eq!(parse_colour(name), Ok(want), "{name}");
        }
        let said = parse_colour("mauve").unwrap_err();
        for form in [
            "`mauve`", "#RRGGBB", "RRGGBB", "#RGB", "white", "grey", "red", "blue",
        ] {
            assert!(said.contains(form), "{form}: {said}");
        }
    }

    /// Against f64 arithmetic: `round(c·a/max + b·(1 − a/max))`, for every alpha.
    #[test]
    fn compositing_matches_f64() {
        let bg = [10u8, 200, 255];
        let rgba: Vec<u8> = (0..=255u8).flat_map(|a| [0, 128, 255, a]).collect();
        let (rgb, translucent) = over(&Samples::Rgba8(rgba.clone()), bg).expect("host memory");
        assert!(translucent);
        for (px, out) in rgba.chunks_exact(4).zip(rgb.chunks_exact(3)) {
            let a = f64::from(px[3]) / 255.0;
            for k in 0..3 {
                let want = f64::from(px[k]) * a + f64::from(bg[k]) * (1.0 - a);
                assert!(
                    (f64::from(out[k]) - want).abs() <= 0.5 + 1e-9,
                    "{px:?} {out:?}"
                );
            }
        }
        let wide: Vec<u16> = (0..=64u16)
            .flat_map(|a| [0, 40_000, 65_535, a * 1023])
            .collect();
        let (rgb, _) = over(&Samples::Rgba16(wide.clone()), bg).expect("host memory");
        for (px, out) in wide.chunks_exact(4).zip(rgb.chunks_exact(3)) {
            let a = f64::from(px[3]) / 65_535.0;
            for k in 0..3 {
                let want = (f64::from(px[k]) / 257.0) * a + f64::from(bg[k]) * (1.0 - a);
                // Rounded twice (to 16 bits, then to 8).
                assert!((f64::from(out[k]) - want).abs() <= 0.51, "{px:?} {out:?}");
            }
        }
        let (_, translucent) = over(&Samples::Rgba8(vec![1, 2, 3, 255]), bg).expect("host memory");
        assert!(!translucent);
    }
}
