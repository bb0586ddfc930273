"""CuPy and PyTorch references for `image/benches/image_kernels.rs`, on the same GPU in the same
run: a resident 3840x2160 RGBA8 frame, RGBA8 out. Each figure is the median over rounds of
20 calls between CUDA events (device time per call, as the bench's queued calls measure it).
Prints one line per figure."""
import statistics

import cupy as cp
import cupyx.scipy.ndimage as ndi
import torch

W, H = 3840, 2160


def per_call(fn, calls=20, rounds=9):
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(rounds):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / calls * 1e3)
    return statistics.median(times)


x = cp.arange(H * W * 4, dtype=cp.uint32).astype(cp.uint8).reshape(H, W, 4)
y = cp.empty_like(x)
print(f"cupy_copy_4k_rgba8: {per_call(lambda: cp.copyto(y, x)):.1f} us")
for sigma in (2, 8):
    # Clamp-to-edge ("nearest"), no blur across channels, RGBA8 in and out (f32 inside).
    us = per_call(lambda: ndi.gaussian_filter(x, sigma=(sigma, sigma, 0), output=y, mode="nearest"))
    print(f"cupy_gaussian_filter_sigma{sigma}_4k_rgba8: {us:.1f} us")

t = torch.as_tensor(x, device="cuda").permute(2, 0, 1).unsqueeze(0).float().div_(255)
# PyTorch and CuPy both launch on the legacy default stream here, so CuPy's events time it.
area = per_call(lambda: torch.nn.functional.interpolate(t, size=(H // 2, W // 2), mode="area"))
print(f"torch_interpolate_area_4k_to_1080p_f32: {area:.1f} us")
