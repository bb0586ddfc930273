//! Colour profiles: a frame is processed in its own profile's linear light and written with
//! that profile. Checked against f64 arithmetic on the profiles' published curves (Adobe RGB
//! (1998): gamma 563/256; Display-P3: the sRGB curve) for a 2×2 area reduction, which averages
//! in linear light.

use image::ImageDecoder;
use vramkit::ContextDesc;

use super::common::{random_bytes, try_gpu};
use super::run_ok;

fn srgb_to_linear(v: f64) -> f64 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

fn linear_to_srgb(v: f64) -> f64 {
    if v <= 0.003_130_8 {
        v * 12.92
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    }
}

const ADOBE_GAMMA: f64 = 563.0 / 256.0;

/// 2×2 area means of `rgb` (`w`×`h`, RGB8) in the linear light of a curve, encoded back.
fn reference(
    rgb: &[u8],
    w: usize,
    h: usize,
    decode: fn(f64) -> f64,
    encode: fn(f64) -> f64,
) -> Vec<f64> {
    let mut out = Vec::new();
    for y in 0..h / 2 {
        for x in 0..w / 2 {
            for c in 0..3 {
                let mut sum = 0.0;
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let v = rgb[((2 * y + dy) * w + 2 * x + dx) * 3 + c];
                    sum += decode(f64::from(v) / 255.0);
                }
                out.push(encode(sum / 4.0) * 255.0);
            }
        }
    }
    out
}

#[test]
fn frames_are_processed_in_their_profiles_linear_light() {
    if try_gpu("cli colour profiles", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (64usize, 48usize);
    let rgb = random_bytes(w * h * 3, 41);
    let adobe = (
        "adobe",
        moxcms::ColorProfile::new_adobe_rgb(),
        (|v: f64| v.powf(ADOBE_GAMMA)) as fn(f64) -> f64,
        (|v: f64| v.powf(1.0 / ADOBE_GAMMA)) as fn(f64) -> f64,
    );
    let p3 = (
        "p3",
        moxcms::ColorProfile::new_display_p3(),
        srgb_to_linear as fn(f64) -> f64,
        linear_to_srgb as fn(f64) -> f64,
    );
    for (name, profile, decode, encode) in [adobe, p3] {
        let icc = profile.encode().expect("a profile");
        let input = dir.path().join(format!("{name}.png"));
        {
            use image::ImageEncoder;
            let mut enc =
                image::codecs::png::PngEncoder::new(std::fs::File::create(&input).expect("create"));
            enc.set_icc_profile(icc.clone()).expect("icc");
            enc.write_image(&rgb, w as u32, h as u32, image::ExtendedColorType::Rgb8)
                .expect("encode");
        }
        let out = dir.path().join(format!("{name}_out.png"));
        run_ok(&[
            input.to_str().expect("utf-8"),
            "--ops",
            &format!("linear,resize:{}x{}:area,srgb", w / 2, h / 2),
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        let mut d = image::codecs::png::PngDecoder::new(std::io::BufReader::new(
            std::fs::File::open(&out).expect("open"),
        ))
        .expect("png");
        assert_eq!(
            d.icc_profile().expect("icc").as_deref(),
            Some(&icc[..]),
            "{name}"
        );
        let got = image::open(&out).expect("output").to_rgb8().into_raw();
        let want = reference(&rgb, w, h, decode, encode);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, r)| (f64::from(*g) - r).abs())
            .fold(0.0, f64::max);
        eprintln!("{name}: at most {worst:.3} levels from f64");
        assert!(worst <= 0.6, "{name}: off by {worst} levels from f64");
        // The test tells curves apart: the sRGB curve's answer for Adobe RGB is over a level away.
        if name == "adobe" {
            let naive = reference(&rgb, w, h, srgb_to_linear, linear_to_srgb);
            let apart = naive
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(apart > 1.5, "{apart}");
        }
    }
}

/// Through the working encoding and back, shadows keep their levels: an identity chain on an
/// Adobe RGB frame gives back every 8-bit level, and each 16-bit code of a dark ramp within
/// 0.4 of an 8-bit level (within two codes from code 4096 up).
#[test]
fn an_identity_chain_keeps_the_shadows_of_a_profiled_frame() {
    if try_gpu("cli colour shadows", ContextDesc::default()).is_none() {
        return;
    }
    use image::ImageEncoder;
    let dir = tempfile::tempdir().expect("tempdir");
    let icc = moxcms::ColorProfile::new_adobe_rgb()
        .encode()
        .expect("a profile");
    let (w, h) = (256u32, 8u32);
    let eight: Vec<u8> = (0..w * h).flat_map(|i| [(i % 256) as u8; 3]).collect();
    let wide: Vec<u16> = (0..w * h)
        .flat_map(|i| {
            [
                (i * 3 % 4096) as u16,
                (i * 37 % 20_000) as u16,
                (i % 600) as u16,
            ]
        })
        .collect();
    for (name, bits16) in [("eight", false), ("wide", true)] {
        let input = dir.path().join(format!("{name}.png"));
        let mut enc =
            image::codecs::png::PngEncoder::new(std::fs::File::create(&input).expect("create"));
        enc.set_icc_profile(icc.clone()).expect("icc");
        if bits16 {
            let bytes: Vec<u8> = wide.iter().flat_map(|v| v.to_ne_bytes()).collect();
            enc.write_image(&bytes, w, h, image::ExtendedColorType::Rgb16)
        } else {
            enc.write_image(&eight, w, h, image::ExtendedColorType::Rgb8)
        }
        .expect("encode");
        let out = dir.path().join(format!("{name}_out.png"));
        run_ok(&[
            input.to_str().expect("utf-8"),
            "--ops",
            "linear,srgb",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        let img = image::open(&out).expect("output");
        if bits16 {
            // The working encoding is 16-bit integers on the sRGB curve, whose linear toe
            // holds fewer codes than a pure gamma near black: below Adobe RGB code 4096 (6 % of
            // the range) a working code spans several, up to 100 at the very bottom, under 0.4
            // of an 8-bit level.
            let got = img.to_rgb16().into_raw();
            for (g, want) in got.iter().zip(&wide) {
                let bound = if *want < 4096 { 100 } else { 2 };
                assert!(
                    g.abs_diff(*want) <= bound,
                    "16-bit code {want} came back as {g}"
                );
            }
        } else {
            assert!(img.to_rgb8().into_raw() == eight, "8-bit levels changed");
        }
    }
}
