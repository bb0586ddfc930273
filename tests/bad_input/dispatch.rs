//! `dispatch` and `dispatch_with`: bindings that are unaligned, empty, ragged, past the
//! allocation or the device's limit; shaders that do not compile; bindings and params that do
//! not match the kernel; stale and foreign handles; the host backend. After every error on the
//! GPU, the context must still move bytes correctly.

use vramkit::backend::wgpu::WgpuBackend;
use vramkit::backend::{KernelSource, Storage};
use vramkit::{Binding, Context, Error, StaleReason};

use crate::check::{alloc, foreign, gpu, host, still_usable, KIB};
use crate::harness::Case;

/// Doubles a buffer of f32 in place.
pub const DOUBLE: KernelSource = KernelSource::new(
    "double",
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
         if (id.x < arrayLength(&x)) { x[id.x] = 2.0 * x[id.x]; }
     }",
    "main",
);

/// Copies `a` into `b`.
const TWO: KernelSource = KernelSource::new(
    "two",
    "@group(0) @binding(0) var<storage, read_write> a: array<f32>;
     @group(0) @binding(1) var<storage, read_write> b: array<f32>;
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
         if (id.x < arrayLength(&b)) { b[id.x] = a[id.x]; }
     }",
    "main",
);

/// As `TWO`, its source declared `read`: refused where both bindings share a block.
const TWO_READ: KernelSource = KernelSource::new(
    "two-read",
    "@group(0) @binding(0) var<storage, read> a: array<f32>;
     @group(0) @binding(1) var<storage, read_write> b: array<f32>;
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
         if (id.x < arrayLength(&b)) { b[id.x] = a[id.x]; }
     }",
    "main",
);

/// Adds a uniform to a buffer.
const WITH_PARAMS: KernelSource = KernelSource::new(
    "with-params",
    "struct P { add: f32, n: u32 }
     @group(0) @binding(0) var<storage, read_write> x: array<f32>;
     @group(0) @binding(1) var<uniform> p: P;
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
         if (id.x < p.n) { x[id.x] = x[id.x] + p.add; }
     }",
    "main",
);

/// Reads 16-byte elements.
const VEC4: KernelSource = KernelSource::new(
    "vec4",
    "@group(0) @binding(0) var<storage, read_write> x: array<vec4<f32>>;
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
         if (id.x < arrayLength(&x)) { x[id.x] = 2.0 * x[id.x]; }
     }",
    "main",
);

/// Does not parse.
const BROKEN: KernelSource = KernelSource::new(
    "broken",
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
     @compute @workgroup_size(64) fn main() { x[0] = undefined_thing + ; }",
    "main",
);

/// With an override constant.
const OVERRIDE: KernelSource = KernelSource::new(
    "override",
    "override SCALE: f32 = 1.0;
     @group(0) @binding(0) var<storage, read_write> x: array<f32>;
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
         if (id.x < arrayLength(&x)) { x[id.x] = SCALE * x[id.x]; }
     }",
    "main",
);

pub const CASES: &[Case] = &[
    Case::new("dispatch (host): any kernel is Unsupported", host_dispatch),
    Case::isolated(
        "dispatch_with (gpu): offset 4, not aligned",
        unaligned_offset,
    ),
    Case::isolated("dispatch_with (gpu): zero-size binding", zero_size),
    Case::isolated("dispatch_with (gpu): binding of 6 bytes", ragged_size),
    Case::isolated(
        "dispatch_with (gpu): range past the allocation",
        range_past_end,
    ),
    Case::isolated(
        "dispatch_with (gpu): offset past the end, to the end",
        offset_past_end,
    ),
    Case::isolated(
        "dispatch_with (gpu): offset + size overflows u64",
        offset_overflow,
    ),
    Case::isolated(
        "dispatch (gpu): binding past max_binding_size",
        past_max_binding,
    ),
    Case::isolated("dispatch (gpu): WGSL that does not parse", broken_wgsl),
    Case::isolated("dispatch (gpu): entry point missing", missing_entry),
    Case::isolated(
        "dispatch_with (gpu): unknown override constant",
        unknown_constant,
    ),
    Case::isolated(
        "dispatch_with (gpu): NaN for an override constant",
        nan_constant,
    ),
    Case::isolated(
        "dispatch (gpu): one binding for a kernel of two",
        too_few_bindings,
    ),
    Case::isolated(
        "dispatch (gpu): two bindings for a kernel of one",
        too_many_bindings,
    ),
    Case::isolated(
        "dispatch (gpu): no params for a kernel with a uniform",
        params_missing,
    ),
    Case::isolated("dispatch (gpu): 128 KiB of params", params_too_large),
    Case::isolated(
        "dispatch (gpu): 4 bytes for an array of vec4",
        binding_below_element,
    ),
    Case::isolated(
        "dispatch (gpu): 262144 workgroups in x",
        too_many_workgroups,
    ),
    Case::isolated(
        "dispatch (gpu): bad dispatch after a good one, good result kept",
        good_then_bad,
    ),
    Case::isolated("dispatch (gpu): released handle", stale),
    Case::isolated(
        "dispatch (gpu): a read binding in a block another binding writes",
        read_binding_in_a_written_block,
    ),
    Case::isolated("dispatch (gpu): handle of a host context", foreign_handle),
    Case::isolated("dispatch_with (gpu): released range binding", stale_range),
];

fn host_dispatch() {
    let ctx = host();
    let h = alloc(&ctx, "x", 256);
    expect_err!(
        ctx.dispatch(&DOUBLE, &[h], &[], [1, 1, 1]),
        Error::Unsupported { .. },
        ["double"],
        ["use a wgpu context"]
    );
}

/// Runs `body` with a GPU context and a 1 KiB allocation `x`, then checks the context is still
/// usable.
fn on_gpu(case: &str, body: impl FnOnce(&Context<WgpuBackend>, vramkit::BufferHandle)) {
    let Some(ctx) = gpu(case) else {
        return;
    };
    let x = alloc(&ctx, "x", KIB);
    body(&ctx, x);
    still_usable(&ctx);
}

fn unaligned_offset() {
    on_gpu("unaligned offset", |ctx, x| {
        let align = ctx.backend().limits().offset_alignment;
        assert!(align > 4, "SETUP: the adapter aligns bindings to {align}");
        expect_err!(
            ctx.dispatch_with(&DOUBLE, &[], &[Binding::range(x, 4, 256)], &[], [1, 1, 1]),
            Error::InvalidRange { .. },
            ["`x`", "4", "alignment"],
            ["must be a multiple"]
        );
    });
}

/// `Error::ZeroSize` documents itself as the error of a zero-byte kernel binding.
fn zero_size() {
    on_gpu("zero-size binding", |ctx, x| {
        expect_err!(
            ctx.dispatch_with(&DOUBLE, &[], &[Binding::range(x, 0, 0)], &[], [1, 1, 1]),
            Error::ZeroSize { .. },
            ["`x`"],
            ["at least 1 byte"]
        );
    });
}

fn ragged_size() {
    on_gpu("ragged binding", |ctx, x| {
        expect_err!(
            ctx.dispatch_with(&DOUBLE, &[], &[Binding::range(x, 0, 6)], &[], [1, 1, 1]),
            Error::InvalidRange { .. },
            ["`x`", "0+6"],
            ["4-byte words"]
        );
    });
}

fn range_past_end() {
    on_gpu("range past end", |ctx, x| {
        expect_err!(
            ctx.dispatch_with(
                &DOUBLE,
                &[],
                &[Binding::range(x, 256, 1024)],
                &[],
                [1, 1, 1]
            ),
            Error::InvalidRange { .. },
            ["`x`", "256", "1024"],
            ["bind a range inside"]
        );
    });
}

fn offset_past_end() {
    on_gpu("offset past end", |ctx, x| {
        let b = Binding {
            handle: x,
            offset: 2048,
            size: None,
        };
        expect_err!(
            ctx.dispatch_with(&DOUBLE, &[], &[b], &[], [1, 1, 1]),
            Error::InvalidRange { .. },
            ["`x`", "2048"],
            ["bind a range inside"]
        );
    });
}

fn offset_overflow() {
    on_gpu("offset overflow", |ctx, x| {
        let offset: u64 = !255;
        expect_err!(
            ctx.dispatch_with(
                &DOUBLE,
                &[],
                &[Binding::range(x, offset, 256)],
                &[],
                [1, 1, 1]
            ),
            Error::InvalidRange { .. },
            ["`x`", &offset.to_string()],
            ["bind a range inside"]
        );
    });
}

fn past_max_binding() {
    on_gpu("past max binding", |ctx, _| {
        let max = ctx.backend().limits().max_binding_size;
        let big = alloc(ctx, "big", max + 4);
        expect_err!(
            ctx.dispatch(&DOUBLE, &[big], &[], [1, 1, 1]),
            Error::TooLarge { .. },
            ["`big`", &(max + 4).to_string(), &max.to_string()],
            ["in parts", "split"]
        );
        ctx.release(big).expect("release");
    });
}

fn broken_wgsl() {
    on_gpu("broken wgsl", |ctx, x| {
        expect_err!(
            ctx.dispatch(&BROKEN, &[x], &[], [1, 1, 1]),
            Error::Shader { .. },
            ["`broken`", "undefined_thing|expected"],
            []
        );
    });
}

fn missing_entry() {
    // The accessors borrow from the source (which may own its strings): copy the WGSL.
    let no_entry = KernelSource::owned("no-entry", DOUBLE.wgsl().to_string(), "nope");
    on_gpu("missing entry", |ctx, x| {
        expect_err!(
            ctx.dispatch(&no_entry, &[x], &[], [1, 1, 1]),
            Error::Shader { .. },
            ["`no-entry`", "nope"],
            []
        );
    });
}

fn unknown_constant() {
    on_gpu("unknown constant", |ctx, x| {
        expect_err!(
            ctx.dispatch_with(&OVERRIDE, &[("NOPE", 2.0)], &[x.into()], &[], [1, 1, 1]),
            Error::Shader { .. },
            ["`override`", "NOPE"],
            []
        );
    });
}

fn nan_constant() {
    on_gpu("NaN constant", |ctx, x| {
        expect_err!(
            ctx.dispatch_with(
                &OVERRIDE,
                &[("SCALE", f64::NAN)],
                &[x.into()],
                &[],
                [1, 1, 1]
            ),
            Error::Shader { .. },
            ["`override`", "SCALE|NaN"],
            []
        );
    });
}

/// Bindings or params that do not match the kernel are refused by the dispatch itself
/// (`Error::ShapeMismatch`), naming the kernel, not by whatever call submits next.
fn mismatch(case: &str, kernel: &KernelSource, n: usize, params: &[u8], workgroups: [u32; 3]) {
    let label = format!("`{}`|'{}'", kernel.label(), kernel.label());
    on_gpu(case, |ctx, x| {
        let handles: Vec<_> = (0..n).map(|_| x).collect();
        let r = ctx.dispatch(kernel, &handles, params, workgroups);
        deferred(ctx, &r);
        expect_err!(r, Error::ShapeMismatch { .. }, [&label], ["bind|params"]);
    });
}

/// A dispatch that should have failed but returned `Ok`: fails the case saying what the next
/// call then returns (the error the dispatch left behind).
#[track_caller]
fn deferred<T: std::fmt::Debug>(ctx: &Context<WgpuBackend>, r: &vramkit::Result<T>) {
    if let Ok(v) = r {
        let next = match ctx.wait() {
            Ok(()) => "Ok".to_string(),
            Err(e) => format!("{e}"),
        };
        panic!(
            "NO ERROR: the dispatch returned Ok({v:?}); the next call (`wait`) returned: {next}"
        );
    }
}

fn too_few_bindings() {
    mismatch("too few bindings", &TWO, 1, &[], [1, 1, 1]);
}

fn too_many_bindings() {
    mismatch("too many bindings", &DOUBLE, 2, &[], [1, 1, 1]);
}

fn params_missing() {
    mismatch("params missing", &WITH_PARAMS, 1, &[], [1, 1, 1]);
}

fn binding_below_element() {
    on_gpu("binding below element", |ctx, x| {
        let r = ctx.dispatch_with(&VEC4, &[], &[Binding::range(x, 0, 4)], &[], [1, 1, 1]);
        deferred(ctx, &r);
        expect_err!(
            r,
            Error::ShapeMismatch { .. },
            ["`x`|`vec4`|'vec4'", "16"],
            ["bind"]
        );
    });
}

/// A `read` binding and a `read_write` one in the same block: wgpu refuses the buffer's two
/// usages when the work is submitted (failing what was recorded with it); vramkit refuses the
/// dispatch.
fn read_binding_in_a_written_block() {
    on_gpu("read binding in a written block", |ctx, x| {
        let y = alloc(ctx, "y", KIB);
        let r = ctx.dispatch(&TWO_READ, &[x, y], &[], [4, 1, 1]);
        deferred(ctx, &r);
        expect_err!(
            r,
            Error::InvalidParameter { .. },
            ["`two-read`", "read"],
            ["read_write"]
        );
    });
}

fn params_too_large() {
    on_gpu("params too large", |ctx, x| {
        let params = vec![0u8; 128 * 1024];
        let r = ctx.dispatch(&WITH_PARAMS, &[x], &params, [1, 1, 1]);
        deferred(ctx, &r);
        expect_err!(r, Error::TooLarge { .. }, ["131072"], ["split", "at most"]);
    });
}

fn too_many_workgroups() {
    on_gpu("too many workgroups", |ctx, x| {
        let r = ctx.dispatch(&DOUBLE, &[x], &[], [65_536 * 4, 1, 1]);
        deferred(ctx, &r);
        expect_err!(
            r,
            Error::InvalidParameter { .. },
            ["workgroups", "262144", "65535"],
            ["split", "at most", "2-D|two-dimensional|y and z"]
        );
    });
}

fn stale() {
    on_gpu("stale dispatch", |ctx, x| {
        let old = alloc(ctx, "old", KIB);
        ctx.release(old).expect("release");
        expect_err!(
            ctx.dispatch(&TWO, &[x, old], &[], [1, 1, 1]),
            Error::StaleHandle {
                reason: StaleReason::Released
            },
            ["released"],
            ["live handles"]
        );
    });
}

fn foreign_handle() {
    on_gpu("foreign dispatch", |ctx, x| {
        let (_other, h) = foreign();
        expect_err!(
            ctx.dispatch(&TWO, &[h, x], &[], [1, 1, 1]),
            Error::StaleHandle {
                reason: StaleReason::ForeignContext
            },
            ["another context"],
            ["use it with the context"]
        );
    });
}

fn stale_range() {
    on_gpu("stale range", |ctx, x| {
        let old = alloc(ctx, "old", KIB);
        ctx.release(old).expect("release");
        let bindings = [Binding::range(x, 0, 256), Binding::range(old, 256, 256)];
        expect_err!(
            ctx.dispatch_with(&TWO, &[], &bindings, &[], [1, 1, 1]),
            Error::StaleHandle {
                reason: StaleReason::Released
            },
            ["released"],
            ["live handles"]
        );
    });
}

/// A good launch, then one whose bindings do not match its kernel, then a download of the
/// good launch's output: the bad launch fails by itself, the good one's result arrives.
fn good_then_bad() {
    on_gpu("good then bad", |ctx, x| {
        let data: Vec<f32> = (0..256).map(|i| i as f32).collect();
        ctx.upload(x, &crate::check::f32_bytes(&data))
            .expect("upload");
        let y = alloc(ctx, "y", KIB);
        ctx.dispatch(&TWO, &[x, y], &[], [4, 1, 1])
            .expect("a good dispatch");
        let bad = ctx.dispatch(&TWO, &[x], &[], [4, 1, 1]);
        let back = ctx.download(y).map(|b| crate::check::floats(&b));
        match (&bad, &back) {
            (Err(_), Ok(v)) if *v == data => {}
            _ => panic!(
                "the bad dispatch returned {}; the download of the good one's output then \
                 returned {}",
                crate::check::short(&format!("{bad:?}")),
                match &back {
                    Ok(v) if *v == data => "the right values".to_string(),
                    Ok(v) => format!("WRONG VALUES (first {:?})", &v[..4]),
                    Err(e) => format!("Err({})", crate::check::short(&e.to_string())),
                }
            ),
        }
    });
}
