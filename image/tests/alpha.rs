//! Filters work on premultiplied alpha: loud colour under alpha 0 must not bleed
//! into visible pixels. Blur and resize through `Pipeline::run`, in both working formats, tiled
//! and untiled, against an f64 premultiplied reference written here; the same reference on
//! straight alpha shows what the test catches.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::Mk;
use vramkit::backend::Backend;
use vramkit::ContextDesc;
use vramkit_image::{parse_chain, Pipeline, PixelFormat, Rect};

gpu_tests!(filters_do_not_bleed_colour_from_under_alpha_zero);

const W: usize = 121;
const H: usize = 93;
/// Invisible magenta, opaque grey, translucent teal.
const HIDDEN: [u8; 4] = [255, 0, 255, 0];
const GREY: [u8; 4] = [128, 128, 128, 255];
const TEAL: [u8; 4] = [0, 128, 128, 96];

/// Magenta under alpha 0 everywhere but a grey block, a teal block and grey dots on the
/// magenta: hard edges between alpha 0 and visible pixels, in both directions.
fn image() -> Vec<[u8; 4]> {
    let mut px = vec![HIDDEN; W * H];
    for y in 0..H {
        for x in 0..W {
            let p = &mut px[y * W + x];
            if (20..70).contains(&x) && (10..60).contains(&y) {
                *p = GREY;
            } else if (60..100).contains(&x) && (50..84).contains(&y) {
                *p = TEAL;
            } else if x % 9 == 4 && y % 7 == 3 {
                *p = GREY;
            }
        }
    }
    px
}

type Px = [f64; 4];

/// A frame in f64, premultiplied (`premultiplied`) or straight.
fn to_f64(px: &[[u8; 4]], premultiplied: bool) -> Vec<Px> {
    px.iter()
        .map(|p| {
            let a = f64::from(p[3]) / 255.0;
            let k = if premultiplied { a } else { 1.0 };
            [0, 1, 2]
                .map(|c| f64::from(p[c]) / 255.0 * k)
                .into_iter()
                .chain([a])
                .collect::<Vec<_>>()
        })
        .map(|v| [v[0], v[1], v[2], v[3]])
        .collect()
}

/// Back to 8 bits, dividing by alpha first when `premultiplied` (colour 0 under alpha 0).
fn to_u8(px: &[Px], premultiplied: bool) -> Vec<[u8; 4]> {
    let q = |v: f64| (v.clamp(0.0, 1.0) * 255.0 + 0.5).floor() as u8;
    px.iter()
        .map(|v| {
            let k = match (premultiplied, v[3] > 0.0) {
                (false, _) => 1.0,
                (true, true) => 1.0 / v[3],
                (true, false) => 0.0,
            };
            [q(v[0] * k), q(v[1] * k), q(v[2] * k), q(v[3])]
        })
        .collect()
}

/// Gaussian blur, separable, clamp-to-edge, radius ⌈3σ⌉.
fn blur(src: &[Px], w: usize, h: usize, sigma: f64) -> Vec<Px> {
    let r = (3.0 * sigma).ceil() as i64;
    let k: Vec<f64> = (-r..=r)
        .map(|i| (-(i * i) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = k.iter().sum();
    let pass = |src: &[Px], horizontal: bool| -> Vec<Px> {
        let mut out = vec![[0.0; 4]; w * h];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                for (i, kw) in k.iter().enumerate() {
                    let d = i as i64 - r;
                    let (sx, sy) = if horizontal {
                        ((x + d).clamp(0, w as i64 - 1), y)
                    } else {
                        (x, (y + d).clamp(0, h as i64 - 1))
                    };
                    let s = src[(sy * w as i64 + sx) as usize];
                    for c in 0..4 {
                        out[(y * w as i64 + x) as usize][c] += kw / sum * s[c];
                    }
                }
            }
        }
        out
    };
    pass(&pass(src, true), false)
}

/// Bilinear resize, pixel centres aligned, clamped to the image.
fn bilinear(src: &[Px], w: usize, h: usize, dw: usize, dh: usize) -> Vec<Px> {
    let axis = |o: usize, n: usize, dn: usize| {
        let u = ((o as f64 + 0.5) * n as f64 / dn as f64 - 0.5).clamp(0.0, (n - 1) as f64);
        let i = u.floor() as usize;
        (i, (i + 1).min(n - 1), u - i as f64)
    };
    let mut out = Vec::with_capacity(dw * dh);
    for y in 0..dh {
        let (y0, y1, ty) = axis(y, h, dh);
        for x in 0..dw {
            let (x0, x1, tx) = axis(x, w, dw);
            let at = |x: usize, y: usize| src[y * w + x];
            out.push(std::array::from_fn(|c| {
                let top = at(x0, y0)[c] * (1.0 - tx) + at(x1, y0)[c] * tx;
                let bottom = at(x0, y1)[c] * (1.0 - tx) + at(x1, y1)[c] * tx;
                top * (1.0 - ty) + bottom * ty
            }));
        }
    }
    out
}

/// Area-average resize: each output pixel averages its footprint, partial pixels by coverage.
fn area(src: &[Px], w: usize, h: usize, dw: usize, dh: usize) -> Vec<Px> {
    let (sx, sy) = (w as f64 / dw as f64, h as f64 / dh as f64);
    let mut out = Vec::with_capacity(dw * dh);
    for y in 0..dh {
        let (ay, by) = (y as f64 * sy, ((y + 1) as f64 * sy).min(h as f64));
        for x in 0..dw {
            let (ax, bx) = (x as f64 * sx, ((x + 1) as f64 * sx).min(w as f64));
            let (mut acc, mut total) = ([0.0; 4], 0.0);
            for yy in ay.floor() as usize..(by.ceil() as usize).min(h) {
                let wy = by.min((yy + 1) as f64) - ay.max(yy as f64);
                for xx in ax.floor() as usize..(bx.ceil() as usize).min(w) {
                    let wt = wy * (bx.min((xx + 1) as f64) - ax.max(xx as f64));
                    for c in 0..4 {
                        acc[c] += wt * src[yy * w + xx][c];
                    }
                    total += wt;
                }
            }
            out.push(acc.map(|v| v / total));
        }
    }
    out
}

/// The chain's f64 reference, filtering premultiplied or straight colour, and which of its
/// pixels have alpha exactly 0 (every pixel they read is hidden).
fn reference(chain: &str, src: &[[u8; 4]], premultiplied: bool) -> (Vec<[u8; 4]>, Vec<bool>) {
    let f = to_f64(src, premultiplied);
    let out = match chain {
        "blur:sigma=3" => blur(&f, W, H, 3.0),
        "resize:60x45:area" => area(&f, W, H, 60, 45),
        "resize:193x151" => bilinear(&f, W, H, 193, 151),
        other => panic!("no reference for {other}"),
    };
    let hidden = out.iter().map(|v| v[3] == 0.0).collect();
    (to_u8(&out, premultiplied), hidden)
}

/// The largest colour difference over pixels at least half opaque in `b`.
fn max_visible_diff(a: &[[u8; 4]], b: &[[u8; 4]]) -> u8 {
    a.iter()
        .zip(b)
        .filter(|(_, b)| b[3] >= 128)
        .flat_map(|(a, b)| (0..3).map(move |c| a[c].abs_diff(b[c])))
        .max()
        .unwrap_or(0)
}

fn filters_do_not_bleed_colour_from_under_alpha_zero<B: Backend>(mk: Mk<B>) {
    let src = image();
    let input: Vec<u8> = src.iter().flatten().copied().collect();
    for chain in ["blur:sigma=3", "resize:60x45:area", "resize:193x151"] {
        let (want, hidden) = reference(chain, &src, true);
        // What the test catches: straight alpha moves visible colour by this much.
        let straight = max_visible_diff(&reference(chain, &src, false).0, &want);
        eprintln!(
            "{chain}: on pixels at least half opaque, straight alpha is {straight} levels off \
             the premultiplied reference"
        );
        assert!(straight > 20, "{chain}: the image must tell the two apart");
        for format in [PixelFormat::Rgba32F, PixelFormat::Rgba8] {
            let what = format!("{chain} in {format:?}");
            let p = Pipeline::new(parse_chain(chain).expect("chain"), [W as u32, H as u32])
                .expect("pipeline")
                .with_working_format(format);
            let (out, _) = p.run(&mk(ContextDesc::default()), &input).expect("run");
            let got: Vec<[u8; 4]> = out
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect();
            assert_eq!(got.len(), want.len(), "{what}");
            for (i, ((g, w), &hidden)) in got.iter().zip(&want).zip(&hidden).enumerate() {
                // Colour counts where alpha does: a pixel whose alpha rounds to 0 may keep a
                // colour (f32 and f64 disagree on coverage of 1e-9), one with alpha exactly 0
                // is colour 0.
                let channels = if w[3] > 0 { 0..4 } else { 3..4 };
                let off = channels.map(|c| g[c].abs_diff(w[c])).max().unwrap_or(0);
                assert!(off <= 1, "{what}: pixel {i}: {g:?}, the reference {w:?}");
                assert!(!hidden || *g == [0; 4], "{what}: hidden pixel {i} is {g:?}");
                // No bleed: visible colour stays within the visible sources' colours (grey,
                // teal), never towards the hidden magenta.
                if g[3] > 0 {
                    let ok = g[0] <= 129 && (127..=129).contains(&g[1]) && g[2] <= 129;
                    assert!(ok, "{what}: pixel {i} {g:?} took colour from under alpha 0");
                }
            }
            // Tiled gives the same bytes.
            let [ow, oh] = p.output_size();
            let desc = ContextDesc {
                staging_chunk: 64 << 10,
                staging_slots: 2,
                ..Default::default()
            };
            let staging = mk(desc.clone()).transfers().staging_capacity();
            let budget = p.tile_bytes(Rect::full(ow, oh)) / 3 + staging;
            let ctx = mk(ContextDesc {
                budget: Some(budget),
                ..desc
            });
            let (tiled, report) = p.run(&ctx, &input).expect("tiled");
            assert!(report.tiles > 1, "{what}: must tile");
            assert!(tiled == out, "{what}: tiled differs from untiled");
        }
    }
}
