//! 16-bit inputs: 16-bit PNGs of every colour type are taken, kept at 16 bits
//! through the pipeline and written as 16-bit PNGs (rounded to 8 bits for WebP), each checked
//! against the library's 16-bit run of the same samples, expanded to RGBA without the tool.

use std::path::Path;

use image::{ColorType, ExtendedColorType};
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Pipeline};

use super::common::{random_bytes, try_gpu};
use super::run;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// `n` pseudo-random 16-bit samples.
fn random_u16(n: usize, seed: u64) -> Vec<u16> {
    random_bytes(2 * n, seed)
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// Native-endian bytes of 16-bit samples, as `image::save_buffer` takes them.
fn ne_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// A decoded 16-bit RGBA PNG's samples; panics unless the file is one.
fn read_rgba16(path: &Path) -> Vec<u16> {
    let img = image::open(path).expect("output decodes");
    assert_eq!(img.color(), ColorType::Rgba16, "{}", path.display());
    img.into_rgba16().into_raw()
}

#[test]
fn sixteen_bit_pngs_stay_sixteen_bit() {
    let Some(ctx) = try_gpu("cli 16-bit", ContextDesc::default()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (37u32, 19u32);
    let n = (w * h) as usize;
    let files = [
        ("l16.png", ExtendedColorType::L16, 1, 51),
        ("la16.png", ExtendedColorType::La16, 2, 52),
        ("rgb16.png", ExtendedColorType::Rgb16, 3, 53),
        ("rgba16.png", ExtendedColorType::Rgba16, 4, 54),
    ];
    let mut expected = Vec::new();
    for (name, color, channels, seed) in files {
        let px = random_u16(n * channels, seed);
        image::save_buffer(dir.path().join(name), &ne_bytes(&px), w, h, color).expect("png");
        // The RGBA expansion: grey into R, G and B, a missing alpha opaque.
        let rgba: Vec<u16> = px
            .chunks_exact(channels)
            .flat_map(|p| match channels {
                1 => [p[0], p[0], p[0], u16::MAX],
                2 => [p[0], p[0], p[0], p[1]],
                3 => [p[0], p[1], p[2], u16::MAX],
                _ => [p[0], p[1], p[2], p[3]],
            })
            .collect();
        expected.push((name, rgba));
    }
    let ops = "linear,blur:sigma=1.5,resize:29x23,srgb";
    let p = Pipeline::new(parse_chain(ops).expect("chain"), [w, h]).expect("pipeline");
    let out = dir.path().join("out");
    let o = run(&[s(dir.path()), "--ops", ops, "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0));
    for (name, rgba) in &expected {
        let want = p.run_rgba16(&ctx, rgba).expect("library run").0;
        let got = read_rgba16(&out.join(name));
        assert!(got == want, "{name}: differs from the library's 16-bit run");
    }
    // WebP holds 8 bits: the 16-bit result rounded, round(v · 255 / 65535).
    let (name, rgba) = &expected[3];
    let webp = dir.path().join("one.webp");
    let o = run(&[s(&dir.path().join(name)), "--ops", ops, "--out", s(&webp)]);
    assert_eq!(o.status.code(), Some(0));
    let want: Vec<u8> = p
        .run_rgba16(&ctx, rgba)
        .expect("library run")
        .0
        .iter()
        .map(|&v| (f64::from(v) * 255.0 / 65535.0).round() as u8)
        .collect();
    let got = image::open(&webp).expect("webp").to_rgba8().into_raw();
    assert!(
        got == want,
        "the WebP is not the 16-bit result rounded to 8 bits"
    );
}

/// A smooth 16-bit ramp through sRGB → linear → sRGB comes back within a few 16-bit levels:
/// an 8-bit path anywhere would be off by up to 257 levels a step.
#[test]
fn sixteen_bit_precision_survives_a_round_trip() {
    if try_gpu("cli 16-bit ramp", ContextDesc::default()).is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (w, h) = (1024u32, 4u32);
    let ramp: Vec<u16> = (0..w * h)
        .flat_map(|i| {
            let v = ((i % w) * 64 + i / w) as u16;
            [v, v / 2, 65535 - v, 40000]
        })
        .collect();
    let input = dir.path().join("ramp.png");
    image::save_buffer(&input, &ne_bytes(&ramp), w, h, ExtendedColorType::Rgba16).expect("png");
    let out = dir.path().join("ramp_out.png");
    let o = run(&[s(&input), "--ops", "linear,srgb", "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0));
    let got = read_rgba16(&out);
    let worst = got
        .iter()
        .zip(&ramp)
        .map(|(&a, &b)| (i32::from(a) - i32::from(b)).abs())
        .max()
        .expect("pixels");
    eprintln!("16-bit ramp through linear,srgb: worst {worst} of 65535 levels");
    assert!(worst <= 8, "16-bit precision lost: {worst} levels off");
}
