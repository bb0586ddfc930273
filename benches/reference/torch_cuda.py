"""PyTorch references for `benches/cuda.rs`, run on the same GPU in the same run:
strict-FP32 matmul 4096^3 (TF32 off) and 256 MiB host<->device copies from pinned and pageable
memory. Prints one line per figure."""
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


n = 4096
a = torch.randn(n, n, device="cuda")
b = torch.randn(n, n, device="cuda")
s = timed(lambda: torch.mm(a, b), 20)
print(f"torch_mm_fp32_{n}: {s * 1e3:.3f} ms = {2 * n**3 / s / 1e12:.1f} TFLOP/s")

size = 256 << 20
dev = torch.empty(size, dtype=torch.uint8, device="cuda")
for name, host in [
    ("pinned", torch.empty(size, dtype=torch.uint8).pin_memory()),
    ("pageable", torch.empty(size, dtype=torch.uint8)),
]:
    host.fill_(7)
    s = timed(lambda: dev.copy_(host), 10)
    print(f"torch_htod_{name}_256MiB: {s * 1e3:.2f} ms = {size / s / 1e9:.1f} GB/s")
    s = timed(lambda: host.copy_(dev), 10)
    print(f"torch_dtoh_{name}_256MiB: {s * 1e3:.2f} ms = {size / s / 1e9:.1f} GB/s")
