//! The weights of the blur kernels and the one place a Gaussian's radius is computed: the blur
//! kernel's taps, the `vramkit-image` ops' radius and the tiling planner's halos all
//! come from [`gaussian_radius`], so a tile's halo is always the kernel's reach (f32 and f64
//! disagree on ⌈3σ⌉ at σ = 6.666667 or 7.3333335; a halo one short shifted seam pixels).

use vramkit::{Error, Result};

/// A blur kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Blur {
    /// Gaussian of standard deviation `sigma` pixels, radius [`gaussian_radius`]`(sigma)`.
    Gaussian {
        /// Standard deviation in pixels, in (0, 341].
        sigma: f32,
    },
    /// Box of `2 radius + 1` pixels.
    Box {
        /// Radius in pixels, 1 to 1024.
        radius: u32,
    },
}

/// The largest blur radius.
pub const MAX_RADIUS: u32 = 1024;

/// The radius of a Gaussian blur of `sigma` pixels: ⌈3σ⌉ computed in f64 (saturating at 0 and
/// `u32::MAX`; NaN gives 0). The only definition of it in vramkit.
///
/// ```
/// use vramkit_kernels::image::gaussian_radius;
/// assert_eq!(gaussian_radius(2.0), 6);
/// // ⌈3σ⌉ in f32 is 20 here: the kernel's weights reach 21.
/// assert_eq!(gaussian_radius(6.666_667), 21);
/// ```
pub fn gaussian_radius(sigma: f32) -> u32 {
    (3.0 * f64::from(sigma))
        .ceil()
        .clamp(0.0, f64::from(u32::MAX)) as u32
}

/// The 1-D weights of a blur, normalised to sum 1 (computed in f64): `2 radius + 1` of them.
///
/// # Errors
/// [`Error::InvalidParameter`] for a sigma that is not in (0, 341] or a box radius outside
/// 1..=1024.
///
/// ```
/// use vramkit_kernels::image::{blur_weights, gaussian_radius, Blur};
/// let w = blur_weights(Blur::Gaussian { sigma: 7.333_333_5 })?;
/// assert_eq!(w.len(), 2 * gaussian_radius(7.333_333_5) as usize + 1);
/// # Ok::<(), vramkit::Error>(())
/// ```
pub fn blur_weights(blur: Blur) -> Result<Vec<f32>> {
    match blur {
        Blur::Gaussian { sigma } => {
            let r = gaussian_radius(sigma);
            if !(sigma > 0.0 && r <= MAX_RADIUS) {
                return Err(Error::InvalidParameter {
                    name: "sigma",
                    value: sigma.to_string(),
                    reason: "a Gaussian blur takes a sigma in (0, 341] pixels",
                });
            }
            let r = i64::from(r);
            let s2 = 2.0 * f64::from(sigma).powi(2);
            let w: Vec<f64> = (-r..=r).map(|i| (-(i * i) as f64 / s2).exp()).collect();
            let sum: f64 = w.iter().sum();
            Ok(w.iter().map(|x| (x / sum) as f32).collect())
        }
        Blur::Box { radius } => {
            if !(1..=MAX_RADIUS).contains(&radius) {
                return Err(Error::InvalidParameter {
                    name: "radius",
                    value: radius.to_string(),
                    reason: "a box blur takes a radius of 1 to 1024 pixels",
                });
            }
            let n = 2 * radius + 1;
            Ok(vec![1.0 / n as f32; n as usize])
        }
    }
}
