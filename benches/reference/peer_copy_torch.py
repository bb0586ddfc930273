"""PyTorch reference for `benches/devices.rs`: 256 MiB copies between GPUs with
`Tensor.copy_` (cudaMemcpyPeerAsync with peer access where the GPUs have it) and, for the
one-device rows, a device-to-device copy on one GPU. Prints one line per figure."""
import time

import torch


def timed(fn, devices, reps=10):
    fn()
    for d in devices:
        torch.cuda.synchronize(d)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        for d in devices:
            torch.cuda.synchronize(d)
        best = min(best, time.perf_counter() - t)
    return best


size = 256 << 20
n = torch.cuda.device_count()
bufs = [torch.full((size,), 7, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]
same = torch.empty_like(bufs[0])
s = timed(lambda: same.copy_(bufs[0]), [0])
print(f"torch_copy_0_to_0_256MiB: {s * 1e3:.2f} ms = {size / s / 1e9:.1f} GB/s")
for i in range(n):
    for j in range(n):
        if i == j:
            continue
        peer = torch.cuda.can_device_access_peer(i, j)
        s = timed(lambda: bufs[j].copy_(bufs[i]), [i, j])
        print(
            f"torch_copy_{i}_to_{j}_256MiB: {s * 1e3:.2f} ms = {size / s / 1e9:.1f} GB/s"
            f" (peer access {peer})"
        )
