#!/usr/bin/env python3
"""Independent reference for vramkit's image ops (image/tests/opencv_reference.rs runs it).

Usage: opencv_reference.py DIR

Writes into DIR the input images (RGBA8 PNG), one raw reference output per case
(`<case>.rgba`: RGBA8 rows, packed) and `cases.tsv`, one line per case:
    case  input.png  ops  out_width  out_height  reference.rgba
The references are computed by OpenCV and numpy in float64 on the [0, 1] values, then clamped
and rounded to 8 bits: Gaussian blur is cv2.GaussianBlur (BORDER_REPLICATE, ksize 2*ceil(3
sigma)+1), resize is cv2.resize INTER_LINEAR (half-pixel centres) or INTER_AREA, and the sRGB
transfer functions are the standard piecewise formulas. Blur and resize run on opaque images
only (alpha 255), where straight and premultiplied filtering agree.
"""
import math
import os
import sys

import cv2
import numpy as np
import skimage.data


def to_float(rgba8):
    return rgba8.astype(np.float64) / 255.0


def to_u8(f):
    return np.floor(np.clip(f, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def srgb_to_linear(f):
    out = f.copy()
    c = f[..., :3]
    out[..., :3] = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return out


def linear_to_srgb(f):
    out = f.copy()
    c = np.clip(f[..., :3], 0.0, None)
    out[..., :3] = np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1.0 / 2.4) - 0.055)
    return out


def blur(f, sigma):
    k = 2 * math.ceil(3.0 * sigma) + 1
    return cv2.GaussianBlur(f, (k, k), sigmaX=sigma, sigmaY=sigma, borderType=cv2.BORDER_REPLICATE)


def resize(f, w, h, area):
    return cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if area else cv2.INTER_LINEAR)


def apply(op, f):
    """One op of vramkit's chain syntax, on a float64 H×W×4 RGBA image."""
    name, _, rest = op.partition(":")
    if name == "linear":
        return srgb_to_linear(f)
    if name == "srgb":
        return linear_to_srgb(f)
    if name == "blur":
        key, _, value = rest.partition("=")
        assert key == "sigma", op
        return blur(f, float(value))
    if name == "resize":
        size, _, flt = rest.partition(":")
        w, h = (int(v) for v in size.split("x"))
        assert flt in ("", "bilinear", "area"), op
        return resize(f, w, h, flt == "area")
    raise ValueError(f"no reference for {op}")


def opaque(rgb8):
    alpha = np.full(rgb8.shape[:2] + (1,), 255, np.uint8)
    return np.concatenate([rgb8, alpha], axis=2)


def gradient(w, h):
    x = np.linspace(0.0, 1.0, w)[None, :]
    y = np.linspace(0.0, 1.0, h)[:, None]
    rgb = np.stack([np.broadcast_to(x, (h, w)), np.broadcast_to(y, (h, w)),
                    np.broadcast_to((x + y) / 2.0, (h, w))], axis=2)
    return opaque(to_u8(rgb))


def noise(w, h, seed, alpha=False):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=(h, w, 4), dtype=np.uint8)
    if not alpha:
        img[..., 3] = 255
    return img


def images():
    # Generated images of odd sizes, and opaque photographs shipped inside scikit-image.
    return {
        "gradient_257x131": gradient(257, 131),
        "noise_1001x67": noise(1001, 67, 1),
        "noise_64x1": noise(64, 1, 2),
        "noise_alpha_97x53": noise(97, 53, 3, alpha=True),
        "astronaut": opaque(skimage.data.astronaut()[..., :3]),
        "coffee": opaque(skimage.data.coffee()[..., :3]),
        "chelsea": opaque(skimage.data.chelsea()[..., :3]),
    }


# (case, image, ops). Blur and resize only on opaque images.
CASES = [
    ("linear_gradient", "gradient_257x131", "linear"),
    ("linear_noise_alpha", "noise_alpha_97x53", "linear"),
    ("srgb_noise_alpha", "noise_alpha_97x53", "srgb"),
    ("srgb_coffee", "coffee", "srgb"),
    ("blur1.5_gradient", "gradient_257x131", "blur:sigma=1.5"),
    ("blur2_noise", "noise_1001x67", "blur:sigma=2"),
    ("blur0.75_noise_row", "noise_64x1", "blur:sigma=0.75"),
    ("blur3_astronaut", "astronaut", "blur:sigma=3"),
    ("bilinear_up_gradient", "gradient_257x131", "resize:400x300"),
    ("bilinear_down_noise", "noise_1001x67", "resize:333x50"),
    ("bilinear_up_row", "noise_64x1", "resize:131x3"),
    ("bilinear_down_chelsea", "chelsea", "resize:301x199"),
    ("area_int_astronaut", "astronaut", "resize:128x128:area"),
    ("area_frac_coffee", "coffee", "resize:247x163:area"),
    ("area_frac_noise", "noise_1001x67", "resize:143x29:area"),
    ("linear_blur_chelsea", "chelsea", "linear,blur:sigma=2"),
    ("blur_area_astronaut", "astronaut", "blur:sigma=1.5,resize:200x200:area"),
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: opencv_reference.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    imgs = images()
    for name, img in imgs.items():
        png = os.path.join(out, name + ".png")
        if not cv2.imwrite(png, cv2.cvtColor(img, cv2.COLOR_RGBA2BGRA)):
            sys.exit(f"could not write {png}")
    lines = []
    for case, name, ops in CASES:
        f = to_float(imgs[name])
        for op in ops.split(","):
            f = apply(op, f)
        ref = to_u8(f)
        assert ref.ndim == 3 and ref.shape[2] == 4, (case, ref.shape)
        ref_path = case + ".rgba"
        ref.tofile(os.path.join(out, ref_path))
        lines.append("\t".join([case, name + ".png", ops, str(ref.shape[1]), str(ref.shape[0]), ref_path]))
    with open(os.path.join(out, "cases.tsv"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
