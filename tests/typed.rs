//! Typed transfers (`upload_slice`, `upload_slice_at`, `download_vec`, `download_into_slice`)
//! on every backend, checked against the data on the host and against the byte path
//! (`download`, `upload`) with each value's bytes written out by hand; their bad input as
//! typed errors; and `Error::kind` on errors real calls return.

mod common;

use common::{random_bytes, Mk};
use vramkit::backend::Backend;
use vramkit::bytemuck::{self, Pod, Zeroable};
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error, ErrorKind};

backend_tests!(
    round_trips_of_every_type_match_the_bytes,
    element_offsets_write_and_read_only_their_range,
    bad_typed_input_is_a_typed_error,
    error_kinds_of_real_errors,
);

/// A `#[repr(C)]` Pod struct aligned to 8, with no padding, derived through vramkit's
/// re-export as an outside crate would.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[bytemuck(crate = "vramkit::bytemuck")]
#[repr(C)]
struct Particle {
    mass: f64,
    id: u32,
    flags: [u16; 2],
}

impl Particle {
    /// Its bytes, written field by field (the independent reference for the layout).
    fn bytes(&self) -> Vec<u8> {
        let mut b = self.mass.to_ne_bytes().to_vec();
        b.extend(self.id.to_ne_bytes());
        b.extend(self.flags[0].to_ne_bytes());
        b.extend(self.flags[1].to_ne_bytes());
        b
    }
}

/// Staging slots of 64 KiB: the larger transfers below stream through several.
fn desc() -> ContextDesc {
    ContextDesc {
        staging_chunk: 64 << 10,
        ..Default::default()
    }
}

fn floats(n: usize, seed: u64) -> Vec<f32> {
    random_bytes(n * 4, seed)
        .chunks_exact(4)
        .map(|c| {
            // Finite values with every mantissa bit pattern: NaNs would not compare equal.
            let v = f32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
            if v.is_finite() {
                v
            } else {
                f32::from_bits(v.to_bits() & 0xbfff_ffff)
            }
        })
        .collect()
}

fn u16s(n: usize, seed: u64) -> Vec<u16> {
    random_bytes(n * 2, seed)
        .chunks_exact(2)
        .map(|c| u16::from_ne_bytes([c[0], c[1]]))
        .collect()
}

fn rgba(n: usize, seed: u64) -> Vec<[u8; 4]> {
    random_bytes(n * 4, seed)
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

fn particles(n: usize, seed: u64) -> Vec<Particle> {
    let f = floats(n, seed);
    let h = u16s(2 * n, seed + 1);
    (0..n)
        .map(|i| Particle {
            mass: f64::from(f[i]) * 1e-3,
            id: (i as u32).wrapping_mul(2_654_435_761),
            flags: [h[2 * i], h[2 * i + 1]],
        })
        .collect()
}

/// Uploads `data` with `upload_slice`, checks the bytes through the byte path against
/// `bytes_of`, reads it back with `download_vec` (aligned for `T`), and writes the bytes with
/// `upload` to read them as `T`s again.
fn round_trip<B: Backend, T: Pod + PartialEq + std::fmt::Debug>(
    ctx: &Context<B>,
    data: &[T],
    bytes_of: impl Fn(&T) -> Vec<u8>,
    what: &str,
) {
    let bytes: Vec<u8> = data.iter().flat_map(&bytes_of).collect();
    let h = ctx
        .alloc(AllocDesc::new(what.to_string(), bytes.len() as u64))
        .expect("alloc");
    ctx.upload_slice(h, data).expect("upload_slice");
    assert!(ctx.download(h).expect("download") == bytes, "{what}: bytes");
    let back: Vec<T> = ctx.download_vec(h).expect("download_vec");
    assert_eq!(back.as_ptr().align_offset(align_of::<T>()), 0, "{what}");
    assert!(back == data, "{what}: download_vec");
    // The other way round: bytes in, typed out.
    ctx.upload(h, &vec![0; bytes.len()]).expect("upload");
    assert!(ctx
        .download_vec::<T>(h)
        .expect("zeros")
        .iter()
        .all(|v| bytemuck::bytes_of(v).iter().all(|&b| b == 0)));
    ctx.upload(h, &bytes).expect("upload");
    assert!(
        ctx.download_vec::<T>(h).expect("download_vec") == data,
        "{what}: from bytes"
    );
    ctx.release(h).expect("release");
}

fn round_trips_of_every_type_match_the_bytes<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    // Small, and past several 64 KiB staging slots.
    for n in [1, 3, 1000, 100_003] {
        round_trip(&ctx, &floats(n, 1), |v| v.to_ne_bytes().to_vec(), "f32");
        round_trip(&ctx, &u16s(n, 2), |v| v.to_ne_bytes().to_vec(), "u16");
        round_trip(&ctx, &rgba(n, 3), |v| v.to_vec(), "[u8; 4]");
        round_trip(&ctx, &particles(n, 4), Particle::bytes, "Particle");
    }
    assert_eq!(ctx.stats().live, 0);
}

/// Checks `upload_slice_at` and `download_into_slice` over `n` `T`s against a model.
fn offsets<B: Backend, T: Pod + PartialEq + std::fmt::Debug>(
    ctx: &Context<B>,
    data: Vec<T>,
    patch: &[T],
    what: &str,
) {
    let n = data.len();
    let h = ctx
        .alloc(AllocDesc::new(
            what.to_string(),
            (n * size_of::<T>()) as u64,
        ))
        .expect("alloc");
    ctx.upload_slice(h, &data).expect("upload_slice");
    let mut model = data;
    // Odd element offsets (odd byte offsets for u8, 2 mod 4 for u16), the end, the start.
    for first in [0, 1, 7, n / 3, n - patch.len()] {
        ctx.transfers()
            .upload_slice_at(h, first as u64, patch)
            .expect("upload_slice_at");
        model[first..first + patch.len()].copy_from_slice(patch);
        assert!(
            ctx.download_vec::<T>(h).expect("download_vec") == model,
            "{what} at {first}"
        );
    }
    for (first, len) in [
        (0, n),
        (1, 5),
        (n / 2 + 1, n / 3),
        (n - 1, 1),
        (n, 0),
        (3, 0),
    ] {
        let mut out = vec![T::zeroed(); len];
        ctx.transfers()
            .download_into_slice(h, first as u64, &mut out)
            .expect("download_into_slice");
        assert!(
            out == model[first..first + len],
            "{what}: {len} from {first}"
        );
    }
    ctx.release(h).expect("release");
}

fn element_offsets_write_and_read_only_their_range<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    for n in [64, 70_001] {
        offsets(&ctx, floats(n, 5), &floats(13, 6), "f32");
        offsets(&ctx, u16s(n, 7), &u16s(9, 8), "u16");
        offsets(&ctx, random_bytes(n, 9), &random_bytes(11, 10), "u8");
        offsets(&ctx, rgba(n, 11), &rgba(17, 12), "[u8; 4]");
        offsets(&ctx, particles(n, 13), &particles(5, 14), "Particle");
    }
    // A patch larger than a staging slot, at an odd element.
    offsets(
        &ctx,
        u16s(200_000, 15),
        &u16s(90_001, 16),
        "u16, large patch",
    );
}

fn expect_kind<T: std::fmt::Debug>(r: vramkit::Result<T>, kind: ErrorKind, what: &str) -> Error {
    match r {
        Err(e) if e.kind() == kind => e,
        other => panic!("{what}: expected {kind:?}, got {other:?}"),
    }
}

fn bad_typed_input_is_a_typed_error<B: Backend>(mk: Mk<B>) {
    let ctx = mk(desc());
    // 10 bytes: two and a half f32s, five u16s.
    let h = ctx.alloc(AllocDesc::new("ten", 10)).expect("alloc");
    let bytes = random_bytes(10, 20);
    ctx.upload(h, &bytes).expect("upload");
    let e = expect_kind(
        ctx.download_vec::<f32>(h),
        ErrorKind::ShapeMismatch,
        "download_vec of 10 bytes as f32",
    );
    let msg = e.to_string();
    assert!(
        msg.contains("`ten` of 10 bytes") && msg.contains("download_into_slice"),
        "{msg}"
    );
    assert_eq!(ctx.download_vec::<u16>(h).expect("five u16s").len(), 5);
    // The whole f32s are there.
    let mut two = [0f32; 2];
    ctx.transfers()
        .download_into_slice(h, 0, &mut two)
        .expect("two f32s");
    assert_eq!(bytemuck::cast_slice::<f32, u8>(&two), &bytes[..8]);
    // Ranges past the end: elements 2..3 are bytes 8..12 of 10.
    let mut one = [0f32; 1];
    let e = expect_kind(
        ctx.transfers().download_into_slice(h, 2, &mut one),
        ErrorKind::InvalidRange,
        "download past the end",
    );
    assert!(
        matches!(
            e,
            Error::InvalidRange {
                offset: 8,
                len: 4,
                size: 10,
                ..
            }
        ),
        "{e:?}"
    );
    expect_kind(
        ctx.transfers().upload_slice_at(h, 2, &[1f32]),
        ErrorKind::InvalidRange,
        "upload past the end",
    );
    expect_kind(
        ctx.upload_slice(h, &[7u32; 3]),
        ErrorKind::InvalidRange,
        "upload longer than the allocation",
    );
    // An element offset whose byte offset passes 2^64.
    for first in [u64::MAX, u64::MAX / 4 + 1] {
        expect_kind(
            ctx.transfers().upload_slice_at(h, first, &[1f32]),
            ErrorKind::InvalidRange,
            "upload at an overflowing offset",
        );
        expect_kind(
            ctx.transfers().download_into_slice(h, first, &mut one),
            ErrorKind::InvalidRange,
            "download at an overflowing offset",
        );
    }
    // Zero-sized element types.
    expect_kind(
        ctx.upload_slice(h, &[(); 4]),
        ErrorKind::InvalidParameter,
        "upload of ()",
    );
    expect_kind(
        ctx.download_vec::<()>(h),
        ErrorKind::InvalidParameter,
        "download_vec of ()",
    );
    expect_kind(
        ctx.transfers()
            .download_into_slice(h, 0, &mut [[0u8; 0]; 2]),
        ErrorKind::InvalidParameter,
        "download of [u8; 0]",
    );
    // Nothing above changed the allocation.
    assert_eq!(ctx.download(h).expect("download"), bytes);
    // Empty slices are no-ops, as empty byte transfers are.
    ctx.upload_slice::<f32>(h, &[]).expect("empty upload");
    ctx.transfers()
        .download_into_slice::<u16>(h, 5, &mut [])
        .expect("empty download at the end");
    ctx.release(h).expect("release");
    expect_kind(
        ctx.download_vec::<u8>(h),
        ErrorKind::StaleHandle,
        "released",
    );
    expect_kind(
        ctx.upload_slice(h, &[1u8]),
        ErrorKind::StaleHandle,
        "released",
    );
    // A handle of another context.
    let other = mk(desc());
    let foreign: BufferHandle = other.alloc(AllocDesc::new("foreign", 16)).expect("alloc");
    expect_kind(
        ctx.download_vec::<f32>(foreign),
        ErrorKind::StaleHandle,
        "foreign",
    );
}

fn error_kinds_of_real_errors<B: Backend>(mk: Mk<B>) {
    let ctx = mk(ContextDesc {
        budget: Some(64 << 20),
        ..Default::default()
    });
    expect_kind(
        ctx.alloc(AllocDesc::new("zero", 0)),
        ErrorKind::ZeroSize,
        "zero",
    );
    expect_kind(
        ctx.alloc(AllocDesc::new("huge", u64::MAX)),
        ErrorKind::TooLarge,
        "huge",
    );
    expect_kind(
        ctx.alloc(AllocDesc::new("big", 128 << 20)),
        ErrorKind::OverBudget,
        "budget",
    );
    let h = ctx.alloc(AllocDesc::new("h", 16)).expect("alloc");
    expect_kind(
        ctx.transfers().upload_at(h, 8, &[0; 16]),
        ErrorKind::InvalidRange,
        "range",
    );
    ctx.release(h).expect("release");
    expect_kind(ctx.release(h), ErrorKind::StaleHandle, "twice");
    let other = vramkit::Context::host(ContextDesc::default());
    expect_kind(
        ctx.wait_for(other.submit().expect("submit")),
        ErrorKind::StaleHandle,
        "wait_for",
    );
    // Kinds are plain values: copied, compared, hashed, printed.
    let kinds: std::collections::HashSet<ErrorKind> = [
        ErrorKind::OverBudget,
        ErrorKind::OverBudget,
        ErrorKind::TooLarge,
    ]
    .into();
    assert_eq!(kinds.len(), 2);
    assert_eq!(ErrorKind::OutOfMemory.to_string(), "OutOfMemory");
}
