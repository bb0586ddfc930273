"""Replays vramkit traces (benches/traces/*.trace.gz) through PyTorch's CUDA caching allocator,
on the same GPU as `examples/replay.rs`, for the side-by-side table in BENCHMARKS.md.

For each trace: mean time per alloc+release (torch.empty(size, uint8) and dropping the
tensor, driven from Python), the median of timed pairs, peak allocated (live) and reserved,
segments (cudaMalloc calls), and the smallest budget under which the replay completes
(bisection over torch.cuda.set_per_process_memory_fraction). Each allocator setting runs in a
fresh process: the default, and expandable_segments:True.

Usage: python3 benches/reference/replay_torch.py benches/traces/*.trace.gz
Prints one JSON object per trace and setting.
"""
import gzip
import json
import os
import statistics
import subprocess
import sys
import time


def load(path):
    header, ops = {}, []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#"):
                header.update(json.loads(line[1:]))
            elif line.strip():
                kind, v = line.split()
                ops.append((kind == "a", int(v)))
    return header, ops


def replay(torch, ops, timed=False):
    """Runs the trace; returns per-pair times (ns) if `timed`. Raises on out-of-memory."""
    handles = []
    empty, u8 = torch.empty, torch.uint8
    if not timed:
        for is_alloc, v in ops:
            if is_alloc:
                handles.append(empty(v, dtype=u8, device="cuda"))
            else:
                handles[v] = None
        return None
    clock = time.perf_counter_ns
    took = []
    for is_alloc, v in ops:
        t = clock()
        if is_alloc:
            handles.append(empty(v, dtype=u8, device="cuda"))
            took.append(clock() - t)
        else:
            handles[v] = None
            took[v] += clock() - t
    return took


def fresh(torch):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()


def one(path):
    import torch

    header, ops = load(path)
    allocs = sum(1 for a, _ in ops if a)
    torch.cuda.init()
    # Warm-up: the CUDA context and the Python paths, not the allocator's cache.
    replay(torch, ops[: min(len(ops), 2000)])
    fresh(torch)
    t = time.perf_counter()
    replay(torch, ops)
    wall = time.perf_counter() - t
    s = torch.cuda.memory_stats()
    result = {
        "trace": header.get("workload", os.path.basename(path)),
        "allocator": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") or "default",
        "allocations": allocs,
        "mean_us_per_pair": wall / allocs * 1e6,
        "peak_allocated": s["allocated_bytes.all.peak"],
        "peak_reserved": s["reserved_bytes.all.peak"],
        "segments": s["segment.all.allocated"],
        "device_allocs": s.get("num_device_alloc", s["segment.all.allocated"]),
    }
    fresh(torch)
    took = replay(torch, ops, timed=True)
    result["median_us_per_pair"] = statistics.median(took) / 1e3
    fresh(torch)
    # The smallest budget that completes: between the live peak and the reserved peak.
    total = torch.cuda.get_device_properties(0).total_memory
    lo, hi = header["live_peak_bytes"], result["peak_reserved"]
    while hi - lo > max(1 << 20, hi // 1000):
        mid = (lo + hi) // 2
        torch.cuda.set_per_process_memory_fraction(mid / total)
        try:
            replay(torch, ops)
            hi = mid
        except torch.OutOfMemoryError:
            lo = mid
        fresh(torch)
    torch.cuda.set_per_process_memory_fraction(1.0)
    result["min_budget"] = hi
    result["live_peak"] = header["live_peak_bytes"]
    result["reserved_over_live"] = result["peak_reserved"] / header["live_peak_bytes"]
    result["min_budget_over_live"] = hi / header["live_peak_bytes"]
    print(json.dumps(result), flush=True)


def main():
    if os.environ.get("VRAMKIT_REPLAY_CHILD"):
        for p in sys.argv[1:]:
            one(p)
        return
    for conf in ["", "expandable_segments:True"]:
        env = dict(os.environ, VRAMKIT_REPLAY_CHILD="1", PYTORCH_CUDA_ALLOC_CONF=conf)
        subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env, check=False)


if __name__ == "__main__":
    main()
