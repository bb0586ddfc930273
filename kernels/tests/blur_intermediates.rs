//! Where a blur keeps its intermediate (`kernels/src/blur_intermediate.rs`): a texture on CPU
//! adapters whose kernels bind textures (lavapipe), counted in the budget and statistics as
//! kind `Texture` and gone after the call; a buffer on GPUs (NVIDIA's Vulkan driver, CUDA),
//! where the measured rule prefers it, and for frames wider than a texture can be. Either way
//! the pixels are the CPU twin's.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc, MemoryKind};
use vramkit_kernels::image::{blur, Blur, ImageView, PixelFormat};
use vramkit_kernels::image_cpu::{blur_cpu, pack_rgba8_cpu, unpack_rgba8_cpu};

gpu_tests!(
    intermediates_are_textures_where_kernels_bind_them,
    frames_wider_than_a_texture_blur_through_a_buffer,
    rgba8_blurs_keep_a_half_float_intermediate,
);

/// Blurs a random `w × h` RGBA32F frame on `ctx` and checks it against the CPU twin; returns
/// the peak texture bytes the context held.
fn blur_and_check<B: Backend>(ctx: &Context<B>, w: u32, h: u32, sigma: f32) -> u64 {
    let n = (w * h) as usize;
    let px: Vec<[f32; 4]> = random_bytes(n * 4, u64::from(w ^ h))
        .chunks_exact(4)
        .map(|c| std::array::from_fn(|i| f32::from(c[i]) / 255.0))
        .collect();
    let bytes = n as u64 * 16;
    let (src, dst) = (
        ctx.alloc(AllocDesc::new("src", bytes)).expect("alloc"),
        ctx.alloc(AllocDesc::new("dst", bytes)).expect("alloc"),
    );
    ctx.upload(src, bytemuck::cast_slice(&px)).expect("upload");
    let (a, b) = (
        ImageView::new(src, w, h, PixelFormat::Rgba32F),
        ImageView::new(dst, w, h, PixelFormat::Rgba32F),
    );
    blur(ctx, &a, &b, [0, 0], Blur::Gaussian { sigma }).expect("blur");
    let got: Vec<[f32; 4]> = bytemuck::cast_slice(&ctx.download(dst).expect("download")).to_vec();
    let want = blur_cpu(&px, w, h, Blur::Gaussian { sigma }).expect("cpu");
    let worst = got
        .iter()
        .flatten()
        .zip(want.iter().flatten())
        .map(|(g, w)| (g - w).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-5, "{w}x{h} sigma {sigma}: off by {worst}");
    ctx.release(src).expect("release");
    ctx.release(dst).expect("release");
    ctx.wait().expect("wait");
    let textures = ctx.stats().kind(MemoryKind::Texture).clone();
    assert_eq!(textures.in_use, 0, "the intermediate outlived the call");
    textures.peak_reserved
}

fn intermediates_are_textures_where_kernels_bind_them<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    // Odd sizes: the texture's power-of-two stride is wider than the frame.
    let peak = blur_and_check(&ctx, 301, 77, 2.5);
    let lavapipe = common::is_lavapipe(&ctx);
    eprintln!("lavapipe: {lavapipe}; texture bytes at peak: {peak}");
    if lavapipe {
        // 301 × 77 RGBA32F, rows padded to 256 bytes: at least 4864 × 77.
        assert!(peak >= 4864 * 77, "a {peak}-byte texture is too small");
    } else {
        assert_eq!(peak, 0, "a GPU's blur made a texture");
    }
}

fn frames_wider_than_a_texture_blur_through_a_buffer<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let side = ctx.backend().limits().max_texture_side;
    if side > 1 << 16 {
        eprintln!("textures of {side} texels a side: no frame here is wider");
        return;
    }
    assert_eq!(blur_and_check(&ctx, side + 1, 3, 1.0), 0);
}

/// An RGBA8 blur through a buffer keeps its intermediate in four f16 per pixel (half the bytes
/// of RGBA32F): every pixel within one level of the CPU twin (f32 throughout, rounded once), and
/// the right part of the frame blurred as a tile of its own (with its origin) equal to the
/// whole. Frames wider than a texture take the buffer on every adapter, lavapipe included
/// (elsewhere any frame does); there the narrower tile takes a texture, which holds the same f16
/// values.
fn rgba8_blurs_keep_a_half_float_intermediate<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc::default());
    let side = ctx.backend().limits().max_texture_side;
    let lavapipe = common::is_lavapipe(&ctx);
    if lavapipe && side > 1 << 16 {
        eprintln!("textures of {side} texels a side: no frame here is wider");
        return;
    }
    let (w, h) = if lavapipe { (side + 3, 5) } else { (517, 203) };
    let n = (w * h) as usize;
    let src: Vec<u32> = bytemuck::cast_slice(&random_bytes(n * 4, 7)).to_vec();
    let alloc = |label| {
        ctx.alloc(AllocDesc::new(label, n as u64 * 4))
            .expect("alloc")
    };
    let (a, b) = (alloc("src"), alloc("dst"));
    ctx.upload(a, bytemuck::cast_slice(&src)).expect("upload");
    let view = |h_: vramkit::BufferHandle, vw, vh| ImageView::new(h_, vw, vh, PixelFormat::Rgba8);
    let sigma = 3.0;
    blur(
        &ctx,
        &view(a, w, h),
        &view(b, w, h),
        [0, 0],
        Blur::Gaussian { sigma },
    )
    .expect("blur");
    let whole: Vec<u32> = bytemuck::cast_slice(&ctx.download(b).expect("download")).to_vec();
    let want = pack_rgba8_cpu(
        &blur_cpu(&unpack_rgba8_cpu(&src), w, h, Blur::Gaussian { sigma }).expect("cpu"),
    );
    let worst = whole
        .iter()
        .zip(&want)
        .flat_map(|(g, w)| {
            (0..4).map(move |c| ((g >> (8 * c)) & 255).abs_diff((w >> (8 * c)) & 255))
        })
        .max()
        .unwrap_or(0);
    eprintln!("{w}x{h} RGBA8 blur through a buffer: worst {worst} level(s) from the CPU twin");
    assert!(worst <= 1, "off by {worst} levels");
    // The right part of the frame as a tile of its own (an output region with its origin).
    let x0 = w / 2 + 1;
    let tile = alloc("tile");
    blur(
        &ctx,
        &view(a, w, h),
        &view(tile, w - x0, h),
        [x0, 0],
        Blur::Gaussian { sigma },
    )
    .expect("tile blur");
    let got: Vec<u32> = bytemuck::cast_slice(&ctx.download(tile).expect("download")).to_vec();
    for y in 0..h as usize {
        let row = &whole[y * w as usize..(y + 1) * w as usize];
        let tile_row = &got[y * (w - x0) as usize..(y + 1) * (w - x0) as usize];
        assert!(
            tile_row == &row[x0 as usize..],
            "row {y}: the tile differs from the whole"
        );
    }
    for h_ in [a, b, tile] {
        ctx.release(h_).expect("release");
    }
    ctx.wait().expect("wait");
    // On lavapipe the tile's intermediate was a texture (the case the equality covers there).
    let textures = ctx.stats().kind(MemoryKind::Texture).peak_reserved;
    assert_eq!(textures > 0, lavapipe, "texture bytes at peak: {textures}");
}
