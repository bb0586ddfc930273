//! A runtime kernel for tests of launches and builds: `y[i] = factor · x[i]`, WGSL and CUDA C
//! made with `format!`, with its inputs and the CPU's answer.

use super::common::random_bytes;
use vramkit::backend::{Backend, KernelSource};
use vramkit::{BufferHandle, Context};

/// `y[i] = factor · x[i]` for `i < n`, WGSL and CUDA C made with `format!`. Workgroups of 64.
pub fn times(label: &str, factor: f32) -> KernelSource {
    let wgsl = format!(
        "struct Params {{ n: u32 }}
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64)
fn times(@builtin(global_invocation_id) id: vec3<u32>) {{
    if (id.x < params.n) {{
        y[id.x] = {factor:?} * x[id.x];
    }}
}}
"
    );
    let cuda = format!(
        "{}
struct Params {{ unsigned n; }};
extern \"C\" __global__ void times(BUF(float) x, BUF(float) y, const Params p) {{
    unsigned i = flat_index();
    if (i < p.n) {{
        y[i] = {factor:?}f * x[i];
    }}
}}
",
        vramkit::backend::CUDA_PRELUDE
    );
    let k = KernelSource::owned(label.to_string(), wgsl, "times");
    // SAFETY: the twin starts with the CUDA prelude, declares both bindings as `BUF(float)` and
    // reaches memory only by indexing them.
    unsafe { k.with_cuda_owned(cuda) }
}

/// Random normal floats of magnitude 2⁻⁶³ .. 2, random sign and mantissa: their products with
/// the tests' factors stay normal (GPUs may flush subnormal f32 to zero: NVIDIA's Vulkan driver
/// does).
pub fn floats(n: usize, seed: u64) -> Vec<f32> {
    random_bytes(n * 4, seed)
        .chunks_exact(4)
        .map(|c| {
            let b = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
            let exponent = 64 + ((b >> 23) & 63);
            f32::from_bits((b & 0x807f_ffff) | (exponent << 23))
        })
        .collect()
}

pub fn cpu(x: &[f32], factor: f32) -> Vec<u32> {
    x.iter().map(|v| (factor * v).to_bits()).collect()
}

pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|v| v.to_bits()).collect()
}

/// Runs `kernel` over `n` elements of `x` into `y`.
pub fn run<B: Backend>(
    ctx: &Context<B>,
    kernel: &KernelSource,
    x: BufferHandle,
    y: BufferHandle,
    n: u32,
) -> vramkit::SubmissionIndex {
    ctx.dispatch(kernel, &[x, y], &n.to_ne_bytes(), [n.div_ceil(64), 1, 1])
        .unwrap_or_else(|e| panic!("{}: {e}", kernel.label()))
}
