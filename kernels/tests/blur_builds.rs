//! A blur builds its two passes together (`Context::build_kernels`) under the keys its launches
//! use: a cold blur builds exactly its two kernels (a key that differed would build each twice),
//! and a second blur builds none. Builds are counted from the backends' log. `blur_area2`
//! always has a buffer intermediate, so it reaches `build_kernels` on every adapter; `blur`
//! has a texture one where the adapter prefers it (lavapipe), and builds without it there.

#[path = "../../tests/common/builds.rs"]
mod builds;
#[path = "../../tests/common/mod.rs"]
mod common;

use builds::{count, one_at_a_time};
use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::{AllocDesc, Context, ContextDesc};
use vramkit_kernels::image::{blur, blur_area2, Blur, ImageView, PixelFormat};

gpu_tests!(a_blur_builds_its_two_passes_once);

fn image<B: Backend>(ctx: &Context<B>, w: u32, h: u32, f: PixelFormat) -> ImageView {
    let bytes = u64::from(w) * u64::from(h) * f.bytes_per_pixel();
    let handle = ctx.alloc(AllocDesc::new("image", bytes)).expect("alloc");
    ctx.upload(handle, &random_bytes(bytes as usize, 9))
        .expect("upload");
    ImageView::new(handle, w, h, f)
}

fn a_blur_builds_its_two_passes_once<B: Backend>(mk: Mk<B>) {
    let _one = one_at_a_time();
    let g = Blur::Gaussian { sigma: 2.0 };
    for (area2, format) in [
        (false, PixelFormat::Rgba8),
        (false, PixelFormat::Rgba32F),
        (true, PixelFormat::Rgba8),
        (true, PixelFormat::Rgba32F),
    ] {
        let ctx = mk(ContextDesc::default());
        let src = image(&ctx, 64, 48, format);
        let half = if area2 { 2 } else { 1 };
        let dst = image(&ctx, 64 / half, 48 / half, format);
        let before = count();
        for round in 0..2 {
            if area2 {
                blur_area2(&ctx, &src, &dst, [0, 0], g).expect("blur_area2");
            } else {
                blur(&ctx, &src, &dst, [0, 0], g).expect("blur");
            }
            ctx.wait().expect("wait");
            assert_eq!(
                count() - before,
                2,
                "{format:?}, area2 {area2}, round {round}: a blur builds its two passes once"
            );
        }
    }
}
