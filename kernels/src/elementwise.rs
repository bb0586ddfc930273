//! Elementwise kernels over f32 buffers of one length: `scale`, `axpy`, `add`.
//!
//! They may run in place (an output that is also an input, e.g. `scale(ctx, x, x, ..)`): each
//! invocation reads its values before it writes its own.

use crate::shaders;
use vramkit::backend::{Backend, KernelSource};
use vramkit::SubmissionIndex;
use vramkit::{Binding, BufferHandle, Context};
use vramkit::{Error, Result};

#[cfg(any(test, feature = "reference"))]
/// The CPU twin of [`scale`]: `y[i] = a * x[i] + b`.
///
/// ```
/// assert_eq!(vramkit_kernels::scale_cpu(&[1.0, 2.0], 3.0, 1.0), vec![4.0, 7.0]);
/// ```
pub fn scale_cpu(x: &[f32], a: f32, b: f32) -> Vec<f32> {
    x.iter().map(|&x| a * x + b).collect()
}

#[cfg(any(test, feature = "reference"))]
/// The CPU twin of [`axpy`]: `y[i] = a * x[i] + y[i]`.
pub fn axpy_cpu(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(&x, &y)| a * x + y).collect()
}

#[cfg(any(test, feature = "reference"))]
/// The CPU twin of [`add`]: `z[i] = x[i] + y[i]`.
pub fn add_cpu(x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(&x, &y)| x + y).collect()
}

/// Checks that every buffer holds the same whole number of f32 values, and returns it.
fn same_length<B: Backend>(ctx: &Context<B>, buffers: &[BufferHandle]) -> Result<u32> {
    let mut first = None;
    for (i, &h) in buffers.iter().enumerate() {
        let size = ctx.observe().size_of(h)?;
        if !size.is_multiple_of(4) {
            return Err(Error::ShapeMismatch {
                expected: format!("operand {i} as a whole number of f32 values (4 bytes each)"),
                actual: format!("{size} bytes, {} past the last whole value", size % 4),
            });
        }
        match first {
            None => first = Some(size),
            Some(f) if f != size => {
                return Err(Error::ShapeMismatch {
                    expected: format!("operand {i} as long as operand 0 ({f} bytes)"),
                    actual: format!("{size} bytes"),
                });
            }
            Some(_) => {}
        }
    }
    let first = first.unwrap_or(0);
    u32::try_from(first / 4).map_err(|_| Error::TooLarge {
        label: "elementwise".into(),
        requested: first / 4,
        max: u64::from(u32::MAX),
        unit: "values",
        what: "values one elementwise kernel covers",
    })
}

/// Launches an elementwise kernel over `n` values: workgroups of 256, two-dimensional past
/// 65,535 of them.
fn launch<B: Backend>(
    ctx: &Context<B>,
    kernel: &KernelSource,
    buffers: &[BufferHandle],
    params: &[u32],
    n: u32,
) -> Result<SubmissionIndex> {
    let groups = n.div_ceil(256);
    let bindings: Vec<Binding> = buffers.iter().map(|&h| h.into()).collect();
    // SAFETY: `same_length` checked that every buffer holds the `n` values the kernel
    // covers; it has no loop, no array of its own and no integer division.
    unsafe {
        ctx.dispatch_unchecked(
            kernel,
            &[],
            &bindings,
            bytemuck::cast_slice(params),
            [groups.min(65_535), groups.div_ceil(65_535), 1],
        )
    }
}

/// Records `y[i] = a * x[i] + b` over f32 buffers of the same length. Returns the submission it
/// belongs to.
///
/// # Errors
/// [`Error::ShapeMismatch`] if the buffers differ in size or do not hold whole f32 values;
/// [`Error::TooLarge`] past 2³² − 1 values; the errors of [`Context::dispatch`].
///
/// ```no_run
/// use vramkit::{AllocDesc, Context};
/// let ctx = Context::new(Default::default())?;
/// let x = ctx.alloc(AllocDesc::new("x", 16))?;
/// let y = ctx.alloc(AllocDesc::new("y", 16))?;
/// ctx.upload(x, bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0]))?;
/// vramkit_kernels::scale(&ctx, x, y, 2.0, 1.0)?;
/// assert_eq!(ctx.download(y)?, bytemuck::cast_slice::<f32, u8>(&[3.0, 5.0, 7.0, 9.0]));
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn scale<B: Backend>(
    ctx: &Context<B>,
    x: BufferHandle,
    y: BufferHandle,
    a: f32,
    b: f32,
) -> Result<SubmissionIndex> {
    let n = same_length(ctx, &[x, y])?;
    launch(
        ctx,
        &shaders::SCALE,
        &[x, y],
        &[a.to_bits(), b.to_bits(), n, 0],
        n,
    )
}

/// Records `y[i] = a * x[i] + y[i]`.
///
/// # Errors
/// As [`scale`].
pub fn axpy<B: Backend>(
    ctx: &Context<B>,
    a: f32,
    x: BufferHandle,
    y: BufferHandle,
) -> Result<SubmissionIndex> {
    let n = same_length(ctx, &[x, y])?;
    launch(ctx, &shaders::AXPY, &[x, y], &[a.to_bits(), n], n)
}

/// Records `z[i] = x[i] + y[i]`.
///
/// # Errors
/// As [`scale`].
pub fn add<B: Backend>(
    ctx: &Context<B>,
    x: BufferHandle,
    y: BufferHandle,
    z: BufferHandle,
) -> Result<SubmissionIndex> {
    let n = same_length(ctx, &[x, y, z])?;
    launch(ctx, &shaders::ADD, &[x, y, z], &[n], n)
}
