//! A resize that changes a frame's shape stretches it: the default chain's `resize:1920x1080`
//! turns a portrait photo into a distorted landscape one. The run goes on as asked, and says so.

use vramkit_image::{Op, MAX_SIDE};

/// Departures from the frame's shape up to this share are rounding, not stretching.
const TOLERANCE: f64 = 0.01;

/// What the first resize of `chain` that changes the shape of a frame of `size` does to it, and
/// the size that would keep the shape at the same height.
pub fn stretched(chain: &[Op], size: [u32; 2]) -> Option<String> {
    let mut now = size;
    for op in chain {
        let Op::Resize {
            width,
            height,
            filter,
        } = *op
        else {
            continue;
        };
        let from = f64::from(now[0]) / f64::from(now[1].max(1));
        let to = f64::from(width) / f64::from(height.max(1));
        if (to / from - 1.0).abs() > TOLERANCE {
            let keep = Op::Resize {
                width: ((f64::from(height) * from).round() as u32).clamp(1, MAX_SIDE),
                height,
                filter,
            };
            return Some(format!(
                "{op} stretches its {}x{} pixels ({from:.2}:1) to {to:.2}:1; {keep} keeps their \
                 shape (give it with --ops)",
                now[0], now[1]
            ));
        }
        now = [width, height];
    }
    None
}

#[cfg(test)]
mod tests {
    use vramkit_image::parse_chain;

    use super::*;

    fn chain(text: &str) -> Vec<Op> {
        parse_chain(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_portrait_frame_through_a_landscape_resize_is_stretched() {
        let default = chain("linear,blur:sigma=3,resize:1920x1080:area,srgb");
        let said = stretched(&default, [3000, 4000]).expect("stretched");
        assert!(
            said.contains("3000x4000 pixels (0.75:1) to 1.78:1"),
            "{said}"
        );
        assert!(said.contains("resize:810x1080:area keeps"), "{said}");
        assert_eq!(stretched(&default, [3840, 2160]), None, "the same shape");
        assert_eq!(stretched(&default, [3841, 2160]), None, "within rounding");
        assert_eq!(stretched(&chain("linear,srgb"), [5, 1000]), None);
    }

    #[test]
    fn each_resize_starts_from_the_one_before() {
        let two = chain("resize:100x50,resize:40x20");
        assert_eq!(stretched(&two, [200, 100]), None);
        let said = stretched(&two, [100, 100]).expect("the first stretches");
        assert!(said.starts_with("resize:100x50 stretches"), "{said}");
        assert!(said.contains("resize:50x50 keeps"), "{said}");
        let later = chain("resize:100x100,resize:40x20");
        let said = stretched(&later, [100, 100]).expect("the second stretches");
        assert!(said.starts_with("resize:40x20"), "{said}");
    }
}
