//! Image kernels: formats that disagree, empty images, strides below the width, buffers too
//! small, regions past the source, resizes to nothing.

use vramkit::backend::host::HostBackend;
use vramkit::SubmissionIndex;
use vramkit::{BufferHandle, Context, Error, Result};
use vramkit_kernels::image::{
    self, Blur, ColorOp, ImageView, PixelFormat, ResizeFilter, ResizeRegion,
};

use crate::check::{alloc, host};
use crate::harness::Case;

use PixelFormat::{Rgba32F, Rgba8};

pub const CASES: &[Case] = &[
    Case::new(
        "image::blur: RGBA8 source, RGBA32F destination",
        blur_formats,
    ),
    Case::new("image::unpack_rgba8: RGBA32F source", unpack_format),
    Case::new("image::pack_rgba8: RGBA32F destination", pack_format),
    Case::new(
        "image::color: RGBA32F source, RGBA8 destination",
        color_formats,
    ),
    Case::new(
        "image::resize: RGBA8 source, RGBA32F destination",
        resize_formats,
    ),
    Case::new("image::color: width 0", zero_width),
    Case::new("image::blur: height 0", zero_height),
    Case::new("image::color: stride 3 below width 8", stride_below_width),
    Case::new(
        "image::color: 16x16 view of a 256-byte buffer",
        buffer_too_small,
    ),
    Case::new("image::blur: stride 9 passes the buffer", stride_too_long),
    Case::new(
        "image::color: region at [1, 0] past the source",
        region_past_source,
    ),
    Case::new("image::blur: origin x = u32::MAX", origin_max),
    Case::new(
        "image::unpack_rgba8: destination larger than source",
        unpack_region,
    ),
    Case::new("image::resize: to width 0", resize_to_zero),
    Case::new("image::resize_region: full source of 0x0", resize_full_zero),
    Case::new(
        "image::resize_region: source origin u32::MAX",
        resize_origin_max,
    ),
];

pub type Ctx = Context<HostBackend>;

/// A host context and an 8×8 RGBA8 and an 8×8 RGBA32F buffer, twice each.
pub struct Frames {
    pub ctx: Ctx,
    pub s8: BufferHandle,
    pub d8: BufferHandle,
    pub s32: BufferHandle,
    pub d32: BufferHandle,
}

pub fn frames() -> Frames {
    let ctx = host();
    let (s8, d8) = (alloc(&ctx, "s8", 256), alloc(&ctx, "d8", 256));
    let (s32, d32) = (alloc(&ctx, "s32", 1024), alloc(&ctx, "d32", 1024));
    Frames {
        ctx,
        s8,
        d8,
        s32,
        d32,
    }
}

pub fn v(h: BufferHandle, w: u32, ht: u32, f: PixelFormat) -> ImageView {
    ImageView::new(h, w, ht, f)
}

pub const BOX1: Blur = Blur::Box { radius: 1 };
pub const EXPECTED: &str = "expected";

#[track_caller]
pub fn shape(r: Result<SubmissionIndex>, names: &[&str]) {
    let e = expect_err!(r, Error::ShapeMismatch { .. }, [], [EXPECTED]);
    crate::check::message(&e, names, &[]);
}

fn blur_formats() {
    let f = frames();
    let r = image::blur(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d32, 8, 8, Rgba32F),
        [0, 0],
        BOX1,
    );
    shape(r, &["destination in Rgba8", "Rgba32F"]);
}

fn unpack_format() {
    let f = frames();
    let r = image::unpack_rgba8(
        &f.ctx,
        &v(f.s32, 8, 8, Rgba32F),
        &v(f.d32, 8, 8, Rgba32F),
        [0, 0],
    );
    shape(r, &["source in Rgba8", "Rgba32F"]);
}

fn pack_format() {
    let f = frames();
    let r = image::pack_rgba8(
        &f.ctx,
        &v(f.s32, 8, 8, Rgba32F),
        &v(f.d32, 8, 8, Rgba32F),
        [0, 0],
    );
    shape(r, &["destination in Rgba8", "Rgba32F"]);
}

fn color_formats() {
    let f = frames();
    let r = image::color(
        &f.ctx,
        &v(f.s32, 8, 8, Rgba32F),
        &v(f.d8, 8, 8, Rgba8),
        [0, 0],
        ColorOp::Luma,
    );
    shape(r, &["destination in Rgba32F", "Rgba8"]);
}

fn resize_formats() {
    let f = frames();
    let r = image::resize(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d32, 4, 4, Rgba32F),
        ResizeFilter::Area,
    );
    shape(r, &["destination in Rgba8", "Rgba32F"]);
}

fn zero_width() {
    let f = frames();
    let r = image::color(
        &f.ctx,
        &v(f.s8, 0, 8, Rgba8),
        &v(f.d8, 8, 8, Rgba8),
        [0, 0],
        ColorOp::Luma,
    );
    shape(r, &["source", "0×8"]);
}

fn zero_height() {
    let f = frames();
    let r = image::blur(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d8, 8, 0, Rgba8),
        [0, 0],
        BOX1,
    );
    shape(r, &["destination", "8×0"]);
}

fn stride_below_width() {
    let f = frames();
    let src = v(f.s8, 8, 8, Rgba8).with_stride(3);
    let r = image::color(&f.ctx, &src, &v(f.d8, 8, 8, Rgba8), [0, 0], ColorOp::Luma);
    shape(r, &["stride 3"]);
}

fn buffer_too_small() {
    let f = frames();
    let r = image::color(
        &f.ctx,
        &v(f.s8, 16, 16, Rgba8),
        &v(f.d8, 8, 8, Rgba8),
        [0, 0],
        ColorOp::Luma,
    );
    shape(r, &["1024 bytes", "256 bytes"]);
}

fn stride_too_long() {
    let f = frames();
    let src = v(f.s8, 8, 8, Rgba8).with_stride(9);
    let r = image::blur(&f.ctx, &src, &v(f.d8, 8, 8, Rgba8), [0, 0], BOX1);
    shape(r, &["284 bytes", "256 bytes"]);
}

fn region_past_source() {
    let f = frames();
    let r = image::color(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d8, 8, 8, Rgba8),
        [1, 0],
        ColorOp::Luma,
    );
    shape(r, &["[1, 0]", "8×8"]);
}

fn origin_max() {
    let f = frames();
    let r = image::blur(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d8, 1, 1, Rgba8),
        [u32::MAX, 0],
        BOX1,
    );
    shape(r, &["4294967295"]);
}

fn unpack_region() {
    let ctx = host();
    let (s, d) = (alloc(&ctx, "s", 256), alloc(&ctx, "d", 16 * 16 * 16));
    let r = image::unpack_rgba8(&ctx, &v(s, 8, 8, Rgba8), &v(d, 16, 16, Rgba32F), [0, 0]);
    shape(r, &["16×16", "8×8"]);
}

fn resize_to_zero() {
    let f = frames();
    let r = image::resize(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d8, 0, 8, Rgba8),
        ResizeFilter::Bilinear,
    );
    shape(r, &["0×8"]);
}

fn region(full_src: [u32; 2], src_origin: [u32; 2]) -> ResizeRegion {
    ResizeRegion {
        full_src,
        full_dst: [4, 4],
        src_origin,
        dst_origin: [0, 0],
    }
}

fn resize_full_zero() {
    let f = frames();
    let r = image::resize_region(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d8, 4, 4, Rgba8),
        ResizeFilter::Area,
        region([0, 0], [0, 0]),
    );
    shape(r, &["full_src: [0, 0]"]);
}

fn resize_origin_max() {
    let f = frames();
    let r = image::resize_region(
        &f.ctx,
        &v(f.s8, 8, 8, Rgba8),
        &v(f.d8, 4, 4, Rgba8),
        ResizeFilter::Area,
        region([16, 16], [u32::MAX, 0]),
    );
    shape(r, &["4294967295"]);
}
