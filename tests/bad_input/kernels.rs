//! `scale`, `axpy`, `add` and `matmul`: lengths and shapes that disagree, odd byte sizes,
//! zero and enormous dimensions, outputs that alias inputs, missing BLAS; in-place elementwise
//! runs that must give the CPU's answer.

use vramkit::{AllocDesc, Error};
use vramkit_kernels::{self as kernels, MatmulDims, MatmulKernel};

use crate::check::{alloc, close, f32_bytes, floats, gpu, host, values};
use crate::harness::{skip, Case};

pub const CASES: &[Case] = &[
    Case::new("scale: x of 16 bytes, y of 32", scale_mismatch),
    Case::new("axpy: x of 32 bytes, y of 16", axpy_mismatch),
    Case::new("add: z shorter than x and y", add_mismatch),
    Case::new("scale: 6-byte buffers", scale_six),
    Case::new("axpy: 10-byte y", axpy_odd),
    Case::new("add: 6-byte z", add_odd),
    Case::isolated("scale: 2^32 + 1 values", elementwise_too_many),
    Case::new("scale (host): Unsupported", scale_host),
    Case::isolated("scale (gpu): in place, x = y", scale_in_place),
    Case::isolated("axpy (gpu): in place, x = y", axpy_in_place),
    Case::isolated("add (gpu): in place, x = y = z", add_in_place),
    Case::new("matmul: m = 0", matmul_m0),
    Case::new("matmul: n = 0", matmul_n0),
    Case::new("matmul: k = 0", matmul_k0),
    Case::new("matmul: every dimension u32::MAX", matmul_u32_max),
    Case::new("matmul: k = u32::MAX, A of 16 bytes", matmul_k_max),
    Case::new("matmul: C is A", matmul_c_is_a),
    Case::new("matmul: C is B", matmul_c_is_b),
    Case::new("matmul: A too small", matmul_a_small),
    Case::new("matmul: B too small", matmul_b_small),
    Case::new("matmul: C too small", matmul_c_small),
    Case::new("matmul_with(Vendor) (host): no BLAS", matmul_vendor_host),
    Case::isolated("matmul_with(Vendor) (gpu): no BLAS", matmul_vendor_gpu),
    Case::isolated("matmul: B past the binding limit", matmul_b_past_binding),
    Case::isolated(
        "matmul (gpu): 1x300000 by 300000x1 computes",
        matmul_long_dot,
    ),
];

const EXPECTED: &str = "expected";

fn scale_mismatch() {
    let ctx = host();
    let (x, y) = (alloc(&ctx, "x", 16), alloc(&ctx, "y", 32));
    expect_err!(
        kernels::scale(&ctx, x, y, 2.0, 0.0),
        Error::ShapeMismatch { .. },
        ["16 bytes", "32 bytes"],
        [EXPECTED]
    );
}

fn axpy_mismatch() {
    let ctx = host();
    let (x, y) = (alloc(&ctx, "x", 32), alloc(&ctx, "y", 16));
    expect_err!(
        kernels::axpy(&ctx, 2.0, x, y),
        Error::ShapeMismatch { .. },
        ["16 bytes", "32 bytes"],
        [EXPECTED]
    );
}

fn add_mismatch() {
    let ctx = host();
    let (x, y, z) = (
        alloc(&ctx, "x", 64),
        alloc(&ctx, "y", 64),
        alloc(&ctx, "z", 60),
    );
    expect_err!(
        kernels::add(&ctx, x, y, z),
        Error::ShapeMismatch { .. },
        ["operand 2", "64 bytes", "60 bytes"],
        [EXPECTED]
    );
}

/// A size that is not whole f32 values: the message must not read "expected 6 bytes, got 6
/// bytes".
#[track_caller]
fn odd(e: Error, size: &str) {
    let msg = e.to_string();
    assert!(
        !msg.contains(&format!("expected {size}, got {size}")),
        "MESSAGE contradicts itself: {msg}"
    );
    assert!(
        msg.contains("4 bytes"),
        "MESSAGE does not say values are 4 bytes: {msg}"
    );
}

fn scale_six() {
    let ctx = host();
    let (x, y) = (alloc(&ctx, "x", 6), alloc(&ctx, "y", 6));
    let e = expect_err!(
        kernels::scale(&ctx, x, y, 2.0, 0.0),
        Error::ShapeMismatch { .. },
        ["6 bytes"],
        [EXPECTED]
    );
    odd(e, "6 bytes");
}

fn axpy_odd() {
    let ctx = host();
    let (x, y) = (alloc(&ctx, "x", 8), alloc(&ctx, "y", 10));
    let e = expect_err!(
        kernels::axpy(&ctx, 2.0, x, y),
        Error::ShapeMismatch { .. },
        ["operand 1", "10 bytes"],
        [EXPECTED]
    );
    odd(e, "10 bytes");
}

fn add_odd() {
    let ctx = host();
    let (x, y, z) = (
        alloc(&ctx, "x", 8),
        alloc(&ctx, "y", 8),
        alloc(&ctx, "z", 6),
    );
    let e = expect_err!(
        kernels::add(&ctx, x, y, z),
        Error::ShapeMismatch { .. },
        ["operand 2", "6 bytes"],
        [EXPECTED]
    );
    odd(e, "6 bytes");
}

/// 2³² + 1 values in place: one buffer of 16 GiB + 4 bytes (host pages untouched).
fn elementwise_too_many() {
    let ctx = host();
    let n = (1u64 << 32) + 1;
    let x = match ctx.alloc(AllocDesc::new("sixteen-gib", n * 4)) {
        Ok(x) => x,
        Err(e) => return skip(&format!("this host cannot reserve 16 GiB: {e}")),
    };
    expect_err!(
        kernels::scale(&ctx, x, x, 2.0, 0.0),
        Error::TooLarge { .. },
        ["4294967297", "4294967295"],
        ["split"]
    );
}

fn scale_host() {
    let ctx = host();
    let (x, y) = (alloc(&ctx, "x", 64), alloc(&ctx, "y", 64));
    expect_err!(
        kernels::scale(&ctx, x, y, 2.0, 0.0),
        Error::Unsupported { .. },
        ["scale"],
        ["use a wgpu context", "CPU reference"]
    );
}

const N: usize = 1000;

fn scale_in_place() {
    let Some(ctx) = gpu("scale in place") else {
        return;
    };
    let v = values(N, 1);
    let x = alloc(&ctx, "x", (N * 4) as u64);
    ctx.upload(x, &f32_bytes(&v)).expect("upload");
    kernels::scale(&ctx, x, x, 1.5, -0.25).expect("in-place scale is allowed");
    let got = floats(&ctx.download(x).expect("download"));
    close(&got, &kernels::scale_cpu(&v, 1.5, -0.25), "scale(x, x)");
}

fn axpy_in_place() {
    let Some(ctx) = gpu("axpy in place") else {
        return;
    };
    let v = values(N, 2);
    let x = alloc(&ctx, "x", (N * 4) as u64);
    ctx.upload(x, &f32_bytes(&v)).expect("upload");
    kernels::axpy(&ctx, 0.5, x, x).expect("in-place axpy is allowed");
    let got = floats(&ctx.download(x).expect("download"));
    close(&got, &kernels::axpy_cpu(0.5, &v, &v), "axpy(x, x)");
}

fn add_in_place() {
    let Some(ctx) = gpu("add in place") else {
        return;
    };
    let v = values(N, 3);
    let x = alloc(&ctx, "x", (N * 4) as u64);
    ctx.upload(x, &f32_bytes(&v)).expect("upload");
    kernels::add(&ctx, x, x, x).expect("in-place add is allowed");
    let got = floats(&ctx.download(x).expect("download"));
    close(&got, &kernels::add_cpu(&v, &v), "add(x, x, x)");
}

/// A host context and three 16-byte buffers (2×2 f32 matrices).
fn mats() -> (
    vramkit::Context<vramkit::backend::host::HostBackend>,
    [vramkit::BufferHandle; 3],
) {
    let ctx = host();
    let hs = [
        alloc(&ctx, "a", 16),
        alloc(&ctx, "b", 16),
        alloc(&ctx, "c", 16),
    ];
    (ctx, hs)
}

fn zero_dim(d: MatmulDims, shown: &str) {
    let (ctx, [a, b, c]) = mats();
    expect_err!(
        kernels::matmul(&ctx, a, b, c, d),
        Error::ShapeMismatch { .. },
        [shown],
        ["at least 1"]
    );
}

fn matmul_m0() {
    zero_dim(MatmulDims { m: 0, n: 2, k: 2 }, "m: 0");
}

fn matmul_n0() {
    zero_dim(MatmulDims { m: 2, n: 0, k: 2 }, "n: 0");
}

fn matmul_k0() {
    zero_dim(MatmulDims { m: 2, n: 2, k: 0 }, "k: 0");
}

fn matmul_u32_max() {
    let (ctx, [a, b, c]) = mats();
    let m = u32::MAX;
    expect_err!(
        kernels::matmul(&ctx, a, b, c, MatmulDims { m, n: m, k: m }),
        Error::ShapeMismatch { .. },
        ["A", "4294967295", "16 bytes"],
        [EXPECTED]
    );
}

fn matmul_k_max() {
    let (ctx, [a, b, c]) = mats();
    let d = MatmulDims {
        m: 1,
        n: 1,
        k: u32::MAX,
    };
    expect_err!(
        kernels::matmul(&ctx, a, b, c, d),
        Error::ShapeMismatch { .. },
        ["A", "4294967295", "17179869180", "16 bytes"],
        [EXPECTED]
    );
}

const D2: MatmulDims = MatmulDims { m: 2, n: 2, k: 2 };

fn matmul_c_is_a() {
    let (ctx, [a, b, _]) = mats();
    expect_err!(
        kernels::matmul(&ctx, a, b, a, D2),
        Error::InvalidParameter { .. },
        ["same allocation as A"],
        ["give C an allocation of its own"]
    );
}

fn matmul_c_is_b() {
    let (ctx, [a, b, _]) = mats();
    expect_err!(
        kernels::matmul(&ctx, a, b, b, D2),
        Error::InvalidParameter { .. },
        ["same allocation as B"],
        ["give C an allocation of its own"]
    );
}

fn small(which: usize, shown: &str) {
    let (ctx, mut hs) = mats();
    hs[which] = alloc(&ctx, "small", 12);
    let [a, b, c] = hs;
    expect_err!(
        kernels::matmul(&ctx, a, b, c, D2),
        Error::ShapeMismatch { .. },
        [shown, "16 bytes", "12 bytes"],
        [EXPECTED]
    );
}

fn matmul_a_small() {
    small(0, "A (2×2)");
}

fn matmul_b_small() {
    small(1, "B (2×2)");
}

fn matmul_c_small() {
    small(2, "C (2×2)");
}

fn matmul_vendor_host() {
    let (ctx, [a, b, c]) = mats();
    expect_err!(
        kernels::matmul_with(&ctx, a, b, c, D2, MatmulKernel::Vendor),
        Error::Unsupported { .. },
        ["vendor"],
        ["use MatmulKernel::Auto"]
    );
}

fn matmul_vendor_gpu() {
    let Some(ctx) = gpu("matmul vendor") else {
        return;
    };
    let [a, b, c] = ["a", "b", "c"].map(|l| alloc(&ctx, l, 16));
    expect_err!(
        kernels::matmul_with(&ctx, a, b, c, D2, MatmulKernel::Vendor),
        Error::Unsupported { .. },
        ["vendor"],
        ["use MatmulKernel::Auto"]
    );
    crate::check::still_usable(&ctx);
}

/// B of 1 × (2²⁵ + 1) f32: 4 bytes past the host's 128 MiB binding limit.
fn matmul_b_past_binding() {
    let ctx = host();
    let n = (1u32 << 25) + 1;
    let bytes = u64::from(n) * 4;
    let (a, b, c) = (
        alloc(&ctx, "a", 4),
        alloc(&ctx, "b", bytes),
        alloc(&ctx, "c", bytes),
    );
    expect_err!(
        kernels::matmul(&ctx, a, b, c, MatmulDims { m: 1, n, k: 1 }),
        Error::TooLarge { .. },
        ["matmul B", &bytes.to_string()],
        ["split"]
    );
}

/// A dot product of 300,000 values: A and C are one row, far below the binding limit, so it
/// is no bad input at all; it must compute (128 rows of A would pass the limit, but there is
/// one).
fn matmul_long_dot() {
    let Some(ctx) = gpu("matmul long dot") else {
        return;
    };
    let k = 300_000u32;
    let (va, vb) = (values(k as usize, 4), values(k as usize, 5));
    let a = alloc(&ctx, "a", u64::from(k) * 4);
    let b = alloc(&ctx, "b", u64::from(k) * 4);
    let c = alloc(&ctx, "c", 4);
    ctx.upload(a, &f32_bytes(&va)).expect("upload");
    ctx.upload(b, &f32_bytes(&vb)).expect("upload");
    let d = MatmulDims { m: 1, n: 1, k };
    if let Err(e) = kernels::matmul(&ctx, a, b, c, d) {
        panic!("WRONG REFUSAL: a 1×{k} · {k}×1 product (1.2 MB operands) failed: {e}");
    }
    let got = floats(&ctx.download(c).expect("download"));
    let want = kernels::matmul_cpu(&va, &vb, d);
    let magnitude: f32 = va.iter().zip(&vb).map(|(x, y)| (x * y).abs()).sum();
    let tol = 1e-5 * magnitude.max(1.0);
    assert!(
        (got[0] - want[0]).abs() <= tol,
        "WRONG ANSWER: {} vs the CPU's {}",
        got[0],
        want[0]
    );
}
