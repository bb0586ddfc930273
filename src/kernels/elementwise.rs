//! Elementwise kernels over f32 buffers.

use crate::backend::{Backend, SubmissionIndex};
use crate::error::{Error, Result};
use crate::{shaders, BufferHandle, Context};

/// The CPU twin of [`scale`]: `y[i] = a * x[i] + b`.
///
/// ```
/// assert_eq!(vramkit::kernels::scale_cpu(&[1.0, 2.0], 3.0, 1.0), vec![4.0, 7.0]);
/// ```
pub fn scale_cpu(x: &[f32], a: f32, b: f32) -> Vec<f32> {
    x.iter().map(|&x| a * x + b).collect()
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
/// vramkit::kernels::scale(&ctx, x, y, 2.0, 1.0)?;
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
    let (xn, yn) = (ctx.size_of(x)?, ctx.size_of(y)?);
    if xn != yn || !xn.is_multiple_of(4) {
        return Err(Error::ShapeMismatch {
            expected: format!("two f32 buffers of one length (x is {xn} bytes)"),
            actual: format!("y of {yn} bytes"),
        });
    }
    let n = u32::try_from(xn / 4).map_err(|_| Error::TooLarge {
        label: "scale".into(),
        requested: xn / 4,
        max: u64::from(u32::MAX),
        what: "values one scale kernel covers",
    })?;
    let params = [a.to_bits(), b.to_bits(), n, 0];
    let groups = n.div_ceil(256);
    ctx.dispatch(
        &shaders::SCALE,
        &[x, y],
        bytemuck::cast_slice(&params),
        [groups.min(65_535), groups.div_ceil(65_535), 1],
    )
}
