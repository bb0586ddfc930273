"""PyTorch matmul references for `kernels/benches/matmul.rs` and `benches/cuda.rs`, run on
the same GPU in the same run: strict FP32 (TF32 off) and FP16 (f16 in, f16 out, PyTorch's
default cuBLAS path) at 4096^3 and 8192^3. Timing with CUDA events around each call after a
warmup; prints the median of N timed calls, one line per figure.

Usage: python3 benches/reference/matmul_torch.py [N]   (N timed calls per figure, default 20)
"""
import statistics
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
# Keep FP16 reductions at PyTorch's default; print it so the figure says which path it is.
REDUCED = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction


def median_ms(fn, reps, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    took = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        took.append(start.elapsed_time(end))
    return statistics.median(took)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(f"device: {torch.cuda.get_device_name()} torch {torch.__version__} "
          f"fp16_reduced_precision_reduction={REDUCED}")
    for dtype, name in [(torch.float32, "fp32"), (torch.float16, "fp16")]:
        for n in (4096, 8192):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            c = torch.empty(n, n, device="cuda", dtype=dtype)
            ms = median_ms(lambda: torch.mm(a, b, out=c), reps)
            tflops = 2 * n**3 / (ms * 1e-3) / 1e12
            print(f"torch_mm_{name}_{n}: {ms:.3f} ms = {tflops:.1f} TFLOP/s (median of {reps})")
            del a, b, c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
