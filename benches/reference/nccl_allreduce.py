"""PyTorch reference for `benches/nccl.rs`: `torch.distributed.all_reduce` (sum, in place) of 1,
64 and 256 MiB of float32 across every GPU, one process per GPU (torch.multiprocessing spawn,
backend nccl, NVLink SHARP off: NCCL_NVLS_ENABLE=0, as for vramkit). Each figure: 20 all-reduces
issued back to back and synchronised, the median of 5 runs after a warm-up, divided by 20;
bus bandwidth as nccl-tests defines it, 2 (n - 1) / n * bytes / time. Rank 0 prints one line
per size in the bench's format.

    python3 benches/reference/nccl_allreduce.py [--quick]
"""
import os
import statistics
import sys
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

REPS = 20


def worker(rank, n, sizes):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n)
    if rank == 0:
        print(f"nccl {'.'.join(map(str, torch.cuda.nccl.version()))}, {n} devices (torch)")
    for mib in sizes:
        nbytes = mib << 20
        buf = torch.full((nbytes // 4,), float(rank), dtype=torch.float32, device="cuda")

        def run():
            for _ in range(REPS):
                dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            torch.cuda.synchronize()

        run()
        times = []
        for _ in range(5):
            dist.barrier()
            t = time.perf_counter()
            run()
            times.append((time.perf_counter() - t) / REPS)
        s = statistics.median(times)
        algbw = nbytes / s / 1e9
        busbw = algbw * 2 * (n - 1) / n
        if rank == 0:
            print(
                f"torch_nccl_allreduce_{n}gpu_{mib}MiB: {s * 1e3:.3f} ms = {busbw:.1f} GB/s busbw"
                f" ({algbw:.1f} GB/s algbw)",
                flush=True,
            )
        del buf
    dist.destroy_process_group()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    sizes = [1] if "--quick" in sys.argv else [1, 64, 256]
    mp.spawn(worker, args=(n, sizes), nprocs=n, join=True)
