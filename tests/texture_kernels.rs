//! Kernels that bind textures (`ctx.textures().dispatch`): `textureLoad` reads texels
//! exactly, hardware-filtered `textureSampleLevel` resizes within two 8-bit levels of an f64
//! bilinear reference (measured: up to 1.52 levels on lavapipe, whose filter weights have 8
//! fractional bits; so the image pipeline never resizes by hardware filtering, which misses
//! the 1-level bar its buffer kernels meet), `textureStore` writes what `Textures::download` reads back, and every
//! mismatched launch is a typed error before anything is recorded. On CUDA and the host,
//! whose textures are linear memory, such launches are refused.

mod common;

use common::{random_bytes, Mk};
use vramkit::backend::{Backend, KernelSource};
use vramkit::texture::{KernelArg, TextureDesc, TextureFormat, TextureUsage};
use vramkit::{AllocDesc, ContextDesc, Error, StaleReason};

gpu_tests!(
    texture_load_reads_every_texel,
    sampled_bilinear_error_is_measured_and_bounded,
    texture_store_writes_what_download_reads,
    mismatched_launches_are_typed_errors,
    stores_past_a_texture_change_nothing,
);

const LOAD: &str = "
@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
struct P { w: u32, h: u32 }
@group(0) @binding(2) var<uniform> p: P;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= p.w || id.y >= p.h) { return; }
    out[id.y * p.w + id.x] = textureLoad(src, vec2<u32>(id.xy), 0);
}";

const SAMPLE: &str = "
@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var samp: sampler;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
struct P { w: u32, h: u32 }
@group(0) @binding(3) var<uniform> p: P;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= p.w || id.y >= p.h) { return; }
    // Pixel centres aligned, as the buffer kernel's bilinear resize.
    let uv = (vec2<f32>(id.xy) + 0.5) / vec2<f32>(f32(p.w), f32(p.h));
    out[id.y * p.w + id.x] = textureSampleLevel(src, samp, uv, 0.0);
}";

const STORE: &str = "
@group(0) @binding(0) var dst: texture_storage_2d<rgba32float, write>;
struct P { w: u32, h: u32 }
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= p.w || id.y >= p.h) { return; }
    textureStore(dst, vec2<u32>(id.xy), vec4<f32>(f32(id.x), f32(id.y), 0.5, 1.0));
}";

fn kernel(label: &'static str, wgsl: &'static str) -> KernelSource {
    KernelSource::new(label, wgsl, "main")
}

fn params(w: u32, h: u32) -> Vec<u8> {
    bytemuck::cast_slice(&[w, h]).to_vec()
}

fn groups(w: u32, h: u32) -> [u32; 3] {
    [w.div_ceil(8), h.div_ceil(8), 1]
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytemuck::cast_slice(bytes).to_vec()
}

/// The f16 encoding of a value f16 holds exactly (a normal number with at most 11 significant
/// bits, or zero).
fn f16_bits(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    assert!(
        (1..31).contains(&exp) && b & 0x1fff == 0,
        "{v} is not exact in f16"
    );
    sign | ((exp as u16) << 10) | ((b >> 13) & 0x3ff) as u16
}

/// `None` on a backend whose kernels bind no textures (after checking it says so).
fn textures_bind<B: Backend>(ctx: &vramkit::Context<B>) -> Option<()> {
    let t = ctx
        .textures()
        .alloc(TextureDesc::new("t", 4, 4, TextureFormat::Rgba8Unorm))
        .expect("alloc");
    let out = ctx.alloc(AllocDesc::new("out", 256)).expect("alloc");
    let r = ctx.textures().dispatch(
        &kernel("load", LOAD),
        &[],
        &[t.into(), out.into()],
        &params(4, 4),
        [1, 1, 1],
    );
    ctx.textures().release(t).expect("release");
    ctx.release(out).expect("release");
    match r {
        Err(Error::Unsupported { .. }) if common::is_cuda(ctx) => None,
        r => {
            r.expect("a texture kernel runs");
            Some(())
        }
    }
}

fn texture_load_reads_every_texel<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    if textures_bind(&ctx).is_none() {
        return;
    }
    let (w, h) = (37, 23);
    let n = (w * h) as usize;
    let out = ctx
        .alloc(AllocDesc::new("out", n as u64 * 16))
        .expect("alloc");
    for (format, seed) in [
        (TextureFormat::Rgba8Unorm, 1),
        (TextureFormat::Rgba16Float, 2),
        (TextureFormat::Rgba32Float, 3),
    ] {
        let t = ctx
            .textures()
            .alloc(TextureDesc::new("src", w, h, format))
            .expect("alloc");
        let want: Vec<f32> = match format {
            TextureFormat::Rgba8Unorm => {
                let bytes = random_bytes(n * 4, seed);
                ctx.textures().upload(t, &bytes).expect("upload");
                bytes.iter().map(|&b| f32::from(b) / 255.0).collect()
            }
            TextureFormat::Rgba16Float => {
                // Eighths up to ±62: exact in f16.
                let v: Vec<f32> = (0..n * 4).map(|i| (i % 997) as f32 / 8.0 - 62.0).collect();
                let bits: Vec<u16> = v.iter().map(|&x| f16_bits(x)).collect();
                ctx.textures()
                    .upload(t, bytemuck::cast_slice(&bits))
                    .expect("upload");
                v
            }
            _ => {
                let v: Vec<f32> = (0..n * 4).map(|i| (i as f32).sin() * 1e3).collect();
                ctx.textures()
                    .upload(t, bytemuck::cast_slice(&v))
                    .expect("upload");
                v
            }
        };
        ctx.textures()
            .dispatch(
                &kernel("load", LOAD),
                &[],
                &[t.into(), out.into()],
                &params(w, h),
                groups(w, h),
            )
            .expect("dispatch");
        let got = floats(&ctx.download(out).expect("download"));
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst <= 1e-6, "{format:?}: textureLoad off by {worst}");
        ctx.textures().release(t).expect("release");
    }
    ctx.release(out).expect("release");
}

/// Bilinear with pixel centres aligned and clamp-to-edge, in f64: the reference for the
/// sampled resize.
fn bilinear_f64(src: &[u8], w: u32, h: u32, ow: u32, oh: u32) -> Vec<f64> {
    let at = |x: i64, y: i64, c: usize| {
        let x = x.clamp(0, i64::from(w) - 1) as usize;
        let y = y.clamp(0, i64::from(h) - 1) as usize;
        f64::from(src[(y * w as usize + x) * 4 + c]) / 255.0
    };
    let mut out = Vec::with_capacity((ow * oh * 4) as usize);
    for y in 0..oh {
        for x in 0..ow {
            let u = (f64::from(x) + 0.5) * f64::from(w) / f64::from(ow) - 0.5;
            let v = (f64::from(y) + 0.5) * f64::from(h) / f64::from(oh) - 0.5;
            let (x0, y0) = (u.floor(), v.floor());
            let (tx, ty) = (u - x0, v - y0);
            let (x0, y0) = (x0 as i64, y0 as i64);
            for c in 0..4 {
                let top = at(x0, y0, c) * (1.0 - tx) + at(x0 + 1, y0, c) * tx;
                let bottom = at(x0, y0 + 1, c) * (1.0 - tx) + at(x0 + 1, y0 + 1, c) * tx;
                out.push(top * (1.0 - ty) + bottom * ty);
            }
        }
    }
    out
}

fn sampled_bilinear_error_is_measured_and_bounded<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    if textures_bind(&ctx).is_none() {
        return;
    }
    let (w, h) = (301, 173);
    let src = random_bytes((w * h * 4) as usize, 9);
    let t = ctx
        .textures()
        .alloc(TextureDesc::new("src", w, h, TextureFormat::Rgba8Unorm))
        .expect("alloc");
    ctx.textures().upload(t, &src).expect("upload");
    for (ow, oh) in [(150, 86), (640, 360), (301, 173), (97, 311)] {
        let out = ctx
            .alloc(AllocDesc::new("out", u64::from(ow * oh) * 16))
            .expect("alloc");
        ctx.textures()
            .dispatch(
                &kernel("sample", SAMPLE),
                &[],
                &[t.into(), KernelArg::Sampler, out.into()],
                &params(ow, oh),
                groups(ow, oh),
            )
            .expect("dispatch");
        let got = floats(&ctx.download(out).expect("download"));
        let want = bilinear_f64(&src, w, h, ow, oh);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(&a, &b)| (f64::from(a) - b).abs() * 255.0)
            .fold(0f64, f64::max);
        println!(
            "{}: sampled bilinear {w}×{h} → {ow}×{oh}: worst {worst:.3} levels from f64",
            ctx.adapter_info()
        );
        // Vulkan lets filter weights have as few as 4 fractional bits; lavapipe and NVIDIA
        // have 8, which bounds the error near 1.5 levels.
        assert!(
            worst <= 2.0,
            "{ow}×{oh}: {worst:.3} levels from the f64 reference"
        );
        ctx.release(out).expect("release");
    }
    ctx.textures().release(t).expect("release");
}

fn texture_store_writes_what_download_reads<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    if textures_bind(&ctx).is_none() {
        return;
    }
    let (w, h) = (45, 19);
    let t = ctx
        .textures()
        .alloc(
            TextureDesc::new("dst", w, h, TextureFormat::Rgba32Float).usage(TextureUsage::STORAGE),
        )
        .expect("alloc");
    ctx.textures()
        .dispatch(
            &kernel("store", STORE),
            &[],
            &[t.into()],
            &params(w, h),
            groups(w, h),
        )
        .expect("dispatch");
    let got = floats(&ctx.textures().download(t).expect("download"));
    let want: Vec<f32> = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| [x as f32, y as f32, 0.5, 1.0]))
        .collect();
    assert_eq!(got, want);
    ctx.textures().release(t).expect("release");
}

/// Writes every texel of a grid far larger than the texture, at coordinates past its edges.
const STORE_WILD: &str = "
@group(0) @binding(0) var dst: texture_storage_2d<rgba32float, write>;
struct P { w: u32, h: u32 }
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    textureStore(dst, vec2<u32>(id.x * p.w, id.y * p.h), vec4<f32>(7.0));
    textureStore(dst, vec2<i32>(-1 - i32(id.x), i32(id.y)), vec4<f32>(7.0));
}";

/// A safe launch storing past a texture's edges leaves its neighbours and its own texels
/// alone (WGSL: an out-of-bounds `textureStore` does nothing).
fn stores_past_a_texture_change_nothing<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    if textures_bind(&ctx).is_none() {
        return;
    }
    let f = TextureFormat::Rgba32Float;
    let desc = |l| TextureDesc::new(l, 16, 16, f).usage(TextureUsage::STORAGE);
    let ts: Vec<_> = ["a", "target", "b"]
        .into_iter()
        .map(|l| ctx.textures().alloc(desc(l)).expect("alloc"))
        .collect();
    let data: Vec<Vec<u8>> = (0..3).map(|i| random_bytes(16 * 16 * 16, 40 + i)).collect();
    for (t, d) in ts.iter().zip(&data) {
        ctx.textures().upload(*t, d).expect("upload");
    }
    // Grid cell (x, y) stores at (x·17, y·17): only (0, 0) is inside; every other store is
    // past the edge, as is every store at negative x.
    ctx.textures()
        .dispatch(
            &kernel("wild", STORE_WILD),
            &[],
            &[ts[1].into()],
            &params(17, 17),
            [8, 8, 1],
        )
        .expect("dispatch");
    let mut want = data[1].clone();
    want[..16].copy_from_slice(bytemuck::cast_slice(&[7f32; 4]));
    for (i, (t, d)) in ts.iter().zip([&data[0], &want, &data[2]]).enumerate() {
        assert!(
            ctx.textures().download(*t).expect("download") == *d,
            "texture {i} changed"
        );
        ctx.textures().release(*t).expect("release");
    }
}

fn mismatched_launches_are_typed_errors<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    if textures_bind(&ctx).is_none() {
        return;
    }
    let f = TextureFormat::Rgba8Unorm;
    let sampled = ctx
        .textures()
        .alloc(TextureDesc::new("s", 8, 8, f))
        .expect("alloc");
    let copy_only = ctx
        .textures()
        .alloc(TextureDesc::new("c", 8, 8, f).usage(TextureUsage::COPY))
        .expect("alloc");
    let stored8 = ctx
        .textures()
        .alloc(TextureDesc::new("s8", 8, 8, f).usage(TextureUsage::STORAGE))
        .expect("alloc");
    let out = ctx.alloc(AllocDesc::new("out", 1024)).expect("alloc");
    let load = kernel("load", LOAD);
    let p = params(8, 8);
    let run =
        |args: &[KernelArg], k: &KernelSource| ctx.textures().dispatch(k, &[], args, &p, [1, 1, 1]);
    let e = run(&[out.into(), sampled.into()], &load);
    assert!(
        matches!(&e, Err(Error::ShapeMismatch { expected, actual })
        if expected.contains("a texture") && actual == "a buffer"),
        "{e:?}"
    );
    let e = run(&[sampled.into()], &load);
    assert!(matches!(e, Err(Error::ShapeMismatch { .. })), "{e:?}");
    let e = run(&[copy_only.into(), out.into()], &load);
    assert!(
        matches!(&e, Err(Error::InvalidParameter { reason, .. }) if reason.contains("SAMPLED")),
        "{e:?}"
    );
    let e = run(
        &[
            KernelArg::Texture {
                handle: sampled,
                mip: 1,
            },
            out.into(),
        ],
        &load,
    );
    assert!(
        matches!(&e, Err(Error::InvalidParameter { reason, .. }) if reason.contains("mip")),
        "{e:?}"
    );
    let e = run(&[stored8.into()], &kernel("store", STORE));
    assert!(
        matches!(&e, Err(Error::ShapeMismatch { actual, .. }) if actual.contains("Rgba8Unorm")),
        "{e:?}"
    );
    let e = ctx.dispatch(&load, &[out], &p, [1, 1, 1]);
    assert!(
        matches!(&e, Err(Error::Unsupported { reason, .. }) if reason.contains("textures().dispatch")),
        "{e:?}"
    );
    // Rgba32Float is not filterable without FLOAT32_FILTERABLE: refused, or sampled where the
    // adapter offers it; never a failed submission.
    let f32_tex = ctx
        .textures()
        .alloc(TextureDesc::new("f", 8, 8, TextureFormat::Rgba32Float))
        .expect("alloc");
    let r = run(
        &[f32_tex.into(), KernelArg::Sampler, out.into()],
        &kernel("sample", SAMPLE),
    );
    assert!(matches!(r, Ok(_) | Err(Error::Unsupported { .. })), "{r:?}");
    ctx.textures().release(f32_tex).expect("release");
    ctx.textures().release(sampled).expect("release");
    let e = run(&[sampled.into(), out.into()], &load);
    assert!(
        matches!(
            e,
            Err(Error::StaleHandle {
                reason: StaleReason::Released
            })
        ),
        "{e:?}"
    );
    // Work recorded before the refusals still runs.
    ctx.wait().expect("wait");
    ctx.textures().release(copy_only).expect("release");
    ctx.textures().release(stored8).expect("release");
    ctx.release(out).expect("release");
}
