//! What every case asserts of an error, and the contexts cases run on.

use vramkit::backend::host::{HostBackend, HostConfig};
use vramkit::backend::wgpu::WgpuBackend;
use vramkit::backend::Backend;
use vramkit::{AllocDesc, BufferHandle, Context, ContextDesc, Error};

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;

/// `expect_err!(call, Error::Variant { .. }, [names..], [hints..])`: the call fails with that
/// variant, and its message (see [`message`]) names each of `names` and says at least one of
/// `hints`. Returns the error.
macro_rules! expect_err {
    ($call:expr, $pat:pat, [$($name:expr),* $(,)?], [$($hint:expr),* $(,)?] $(,)?) => {{
        match $call {
            Err(e @ $pat) => {
                $crate::check::message(&e, &[$($name),*], &[$($hint),*]);
                e
            }
            Err(e) => panic!(
                "WRONG VARIANT: expected {}, got {e:?}\n      message: {e}",
                stringify!($pat)
            ),
            Ok(v) => panic!(
                "NO ERROR: expected {}, the call succeeded with {}",
                stringify!($pat),
                $crate::check::short(&format!("{v:?}"))
            ),
        }
    }};
}

/// `s`, cut to 120 characters.
pub fn short(s: &str) -> String {
    if s.chars().count() <= 120 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(120).collect::<String>())
    }
}

/// Checks an error's message: it contains every one of `names`, at least one of `hints`
/// (case-insensitively; none given: not checked), each of them possibly alternatives separated
/// by `|`, and no run of spaces between two words (a string continuation that lost its `\`).
/// `BAD_INPUT_SHOW=1` prints every message checked.
#[track_caller]
pub fn message(e: &Error, names: &[&str], hints: &[&str]) {
    let msg = e.to_string();
    if std::env::var("BAD_INPUT_SHOW").is_ok_and(|v| v == "1") {
        eprintln!("MESSAGE {e:?}\n    {msg}");
    }
    for name in names {
        assert!(
            name.split('|').any(|n| msg.contains(n)),
            "MESSAGE does not name `{name}`: {msg}"
        );
    }
    let lower = msg.to_lowercase();
    assert!(
        hints.is_empty()
            || hints
                .iter()
                .flat_map(|h| h.split('|'))
                .any(|h| lower.contains(&h.to_lowercase())),
        "MESSAGE does not say what to do (none of {hints:?}): {msg}"
    );
    let chars: Vec<char> = msg.chars().collect();
    for (i, w) in chars.windows(3).enumerate() {
        if i > 0 && w == [' '; 3] && chars[i - 1].is_alphanumeric() {
            let after = chars[i..].iter().find(|&&c| c != ' ');
            assert!(
                !after.is_some_and(|c| c.is_alphanumeric()),
                "MESSAGE has a run of spaces between words (a broken string continuation?): \
                 {msg:?}"
            );
        }
    }
}

/// A host context with the default description.
pub fn host() -> Context<HostBackend> {
    Context::host(ContextDesc::default())
}

/// A host context with `desc`.
pub fn host_with(desc: ContextDesc) -> Context<HostBackend> {
    Context::host(desc)
}

/// A host context with a budget.
pub fn host_budget(budget: u64) -> Context<HostBackend> {
    Context::host(ContextDesc {
        budget: Some(budget),
        ..Default::default()
    })
}

/// A host context over an emulated device with these settings.
pub fn host_config(config: HostConfig) -> Context<HostBackend> {
    Context::with_backend(HostBackend::new(config), ContextDesc::default())
}

/// The wgpu context for a GPU case, or `None` when there is no adapter (the case then skips).
pub fn gpu(case: &str) -> Option<Context<WgpuBackend>> {
    gpu_with(case, ContextDesc::default())
}

/// As [`gpu`], with `desc`.
pub fn gpu_with(case: &str, desc: ContextDesc) -> Option<Context<WgpuBackend>> {
    crate::common::try_gpu(case, desc)
}

/// Allocates or fails the case.
#[track_caller]
pub fn alloc<B: Backend>(ctx: &Context<B>, label: &'static str, size: u64) -> BufferHandle {
    match ctx.alloc(AllocDesc::new(label, size)) {
        Ok(h) => h,
        Err(e) => panic!("SETUP: allocating {size} bytes for `{label}` failed: {e}"),
    }
}

/// A handle whose allocation was released, and its context.
pub fn released<B: Backend>(ctx: &Context<B>) -> BufferHandle {
    let h = alloc(ctx, "released", 64);
    ctx.release(h).expect("release");
    h
}

/// A live handle of another context (kept alive for the duration of the case).
pub fn foreign() -> (Context<HostBackend>, BufferHandle) {
    let other = host();
    let h = alloc(&other, "foreign", 64);
    (other, h)
}

/// Checks that the context still moves bytes correctly after an error.
#[track_caller]
pub fn still_usable<B: Backend>(ctx: &Context<B>) {
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    let h = alloc(ctx, "after the error", data.len() as u64);
    let up = ctx.upload(h, &data);
    assert!(up.is_ok(), "AFTER THE ERROR an upload fails: {up:?}");
    match ctx.download(h) {
        Ok(back) => assert!(
            back == data,
            "AFTER THE ERROR a round trip reads other bytes"
        ),
        Err(e) => panic!("AFTER THE ERROR a download fails: {e}"),
    }
    ctx.release(h).expect("release");
}

/// Bytes of f32 values.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// f32 values of bytes.
pub fn floats(b: &[u8]) -> Vec<f32> {
    bytemuck::cast_slice(b).to_vec()
}

/// Deterministic f32 values in about [-4, 4].
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 125.0 - 4.0)
        .collect()
}

/// Asserts `got` is `want` within a relative tolerance of a few roundings.
#[track_caller]
pub fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(
        got.len(),
        want.len(),
        "WRONG ANSWER: {what}: lengths differ"
    );
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 4.0 * f32::EPSILON * (w.abs() + 1.0),
            "WRONG ANSWER: {what}[{i}] = {g}, the CPU reference says {w}"
        );
    }
}
