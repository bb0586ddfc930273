"""Runs one workload of workloads.py under one allocator, in this process, and prints one
JSON line with what it measured (everything else goes to stderr).

Modes (the allocator is chosen before CUDA starts, so one mode per process):
  default     PyTorch's caching allocator
  expandable  the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  vramkit     vramkit.torch.enable() with its default configuration
              (VRAMKIT_BENCH_OOM=null: enable(oom="null"), for where the shim cannot be built)

Usage:
  python run_one.py WORKLOAD --mode MODE [--steps N] [--warmup W] [--batch B] [--seed S]
      W warm-up steps, then N timed steps (torch.cuda.synchronize() around each).
  python run_one.py WORKLOAD --mode MODE --max-batch CAP_GIB [--probe-steps 3] [--deadline T]
      Leaves CAP_GIB GiB of the GPU free (a ballast cudaMalloc made before PyTorch starts
      CUDA, so it is outside every allocator's accounting), then finds by doubling and
      bisection the largest batch size whose first --probe-steps steps run without running
      out of memory. Each probe runs in a fresh process (forked from this one before CUDA
      starts; --probe-via spawn starts a new interpreter instead).
  python run_one.py WORKLOAD --sanitize [--mode vramkit]
      One step, no warm-up: for compute-sanitizer --tool memcheck python run_one.py ...

Figures (bytes unless named otherwise):
  peak_reserved     default/expandable: torch.cuda.max_memory_reserved();
                    vramkit: stats()["peak_reserved"]
  peak_allocated    default/expandable: torch.cuda.max_memory_allocated() (sizes rounded up
                    to 512 B); vramkit: stats()["peak_requested"] (bytes asked for);
                    peak_in_use: vramkit's stats()["peak_in_use"] (rounded to its unit)
  device_used_peak  max over the steps of total - free from torch.cuda.mem_get_info(),
                    sampled after every step (warm-up included)
  Peaks cover the whole process (vramkit has no peak reset), model construction included,
  for every mode alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from harness import (HERE, MODES, device_facts, device_used, emit, enable_allocator, is_oom,
                     redirect_stdout, set_environment, sync, versions)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload")
    p.add_argument("--mode", choices=MODES, default=None,
                   help="allocator (default: default; vramkit with --sanitize)")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--batch", type=int, default=None, help="batch size (default: the workload's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-batch", type=float, default=None, metavar="CAP_GIB",
                   help="search the largest batch with CAP_GIB GiB of the GPU free")
    p.add_argument("--probe-steps", type=int, default=3)
    p.add_argument("--start-batch", type=int, default=None,
                   help="first probe (default: the workload's default batch)")
    p.add_argument("--batch-limit", type=int, default=8192, help="never probe above this")
    p.add_argument("--deadline", type=float, default=None,
                   help="time.time() after which no new probe starts")
    p.add_argument("--probe-timeout", type=float, default=90.0, help="seconds per probe")
    p.add_argument("--probe-via", choices=("fork", "spawn"), default="fork")
    p.add_argument("--probe", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--cap-bytes", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--sanitize", action="store_true", help="one step, no warm-up")
    a = p.parse_args(argv)
    if a.mode is None:
        a.mode = "vramkit" if a.sanitize else "default"
    if a.sanitize:
        a.steps, a.warmup = 1, 0
    return a

def memory_figures(mode: str, dev, vk) -> dict:
    """Peaks and counters of the allocator in use."""
    import torch

    if mode == "vramkit":
        s = vk.stats(dev.index or 0)
        out = {
            "vramkit_oom": os.environ.get("VRAMKIT_BENCH_OOM") or "default",
            "peak_reserved": s["peak_reserved"],
            "peak_allocated": s["peak_requested"],
            "peak_allocated_source": "vramkit peak_requested",
            "peak_requested": s["peak_requested"],
            "peak_in_use": s["peak_in_use"],
            "vramkit_stats": dict(s),
        }
        try:
            out["vramkit_torch_memory_stats"] = dict(vk.torch.memory_stats(dev.index or 0))
        except Exception as e:  # noqa: BLE001 - recorded, the run's figures stand without it
            out["vramkit_torch_memory_stats"] = f"error: {e}"
        return out
    if dev.type != "cuda":
        return {}
    st = torch.cuda.memory_stats(dev)
    out = {
        "peak_reserved": torch.cuda.max_memory_reserved(dev),
        "peak_allocated": torch.cuda.max_memory_allocated(dev),
        "peak_allocated_source": "torch max_memory_allocated",
        "torch_stats": {k: st.get(k) for k in (
            "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
            "num_sync_all_streams", "segment.all.peak", "allocation.all.allocated",
            "reserved_bytes.all.current", "allocated_bytes.all.current",
            "inactive_split_bytes.all.peak")},
    }
    try:
        segs = torch.cuda.memory._snapshot()["segments"]
        out["torch_stats"]["segments_now"] = len(segs)
        out["torch_stats"]["expandable_segments_seen"] = any(g.get("is_expandable") for g in segs)
    except Exception as e:  # noqa: BLE001
        out["torch_stats"]["snapshot_error"] = str(e)
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def malloc_free_ns(s0, s1):
    """Mean ns inside vramkit per malloc, counting its frees: (malloc_ns + free_ns) / malloc_calls
    between two stats() dicts (s0 None: since the start)."""
    def d(k):
        return s1[k] - (s0[k] if s0 else 0)

    calls = d("malloc_calls")
    return (d("malloc_ns") + d("free_ns")) / calls if calls else None


#: Where the time inside vramkit goes: the calls themselves, and the driver's part of them.
TIME_FIELDS = (
    "malloc_ns", "free_ns", "grow_ns", "page_ns", "give_back_ns", "stream_wait_ns", "page_wait_ns"
)


def per_malloc_ns(s0, s1):
    """Each of TIME_FIELDS per malloc between two stats() dicts (s0 None: since the start)."""
    calls = s1["malloc_calls"] - (s0["malloc_calls"] if s0 else 0)
    if not calls:
        return None
    return {k: (s1.get(k, 0) - (s0.get(k, 0) if s0 else 0)) / calls for k in TIME_FIELDS}


# ---------------------------------------------------------------- one run


def run(a) -> int:
    t_start = time.perf_counter()
    changed = set_environment(a.mode)
    try:
        vk = enable_allocator(a.mode)
    except Exception as e:  # noqa: BLE001 - no allocator, no run: say so in the record
        print(f"run_one: enabling {a.mode} failed: {e}", file=sys.stderr)
        emit({"kind": "run", "workload": a.workload, "mode": a.mode, "sanitize": a.sanitize,
              "error": f"error: enabling {a.mode}: {type(e).__name__}: {str(e)[:500]}",
              "losses": [], "step_ms": []})
        return 1
    import torch

    sys.path.insert(0, HERE)
    import workloads as W

    dev = W.bench_device()
    record = {"kind": "run", "workload": a.workload, "mode": a.mode, "seed": a.seed,
              "steps": a.steps, "warmup": a.warmup, "sanitize": a.sanitize,
              "scale": W.bench_scale(), "env_changed": changed,
              "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
              "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
              "vramkit_env": {k: v for k, v in os.environ.items()
                              if k.startswith("VRAMKIT_") and k != "VRAMKIT_LIBRARY"},
              **versions()}
    W.configure_determinism()
    if dev.type == "cuda":
        torch.cuda.init()
        record.update(device_facts(dev))
        record["device_used_at_start"] = device_used(dev)
        try:
            record["allocator_backend"] = torch.cuda.get_allocator_backend()
        except Exception as e:  # noqa: BLE001
            record["allocator_backend"] = f"error: {e}"
    else:
        record.update(device_facts(dev))
    losses, times, used = [], [], []
    vk_before = None
    status = 0
    try:
        t = time.perf_counter()
        w = W.WORKLOADS[a.workload](a.batch, a.seed)
        sync(dev)
        record["setup_s"] = time.perf_counter() - t
        record["batch"] = w.batch
        record["workload_info"] = w.info
        for i in range(a.warmup + a.steps):
            if i == a.warmup and vk is not None:
                vk_before = dict(vk.stats(dev.index or 0))
            sync(dev)
            t = time.perf_counter()
            losses.append(w.step())
            sync(dev)
            dt = time.perf_counter() - t
            if i >= a.warmup:
                times.append(dt * 1e3)
            elif i == 0:
                record["first_step_ms"] = dt * 1e3
            used.append(device_used(dev))
        record["error"] = None
    except Exception as e:  # noqa: BLE001 - the record says what went wrong
        record["error"] = f"{'oom' if is_oom(e) else 'error'}: {type(e).__name__}: {str(e)[:500]}"
        record["oom"] = is_oom(e)
        status = 1
        print(f"run_one: {a.workload}/{a.mode} failed after {len(losses)} steps: {e}", file=sys.stderr)
    record["losses"] = losses
    record["step_ms"] = times
    record["steps_done"] = len(losses)
    record["median_ms"] = statistics.median(times) if times else None
    record["mean_ms"] = statistics.fmean(times) if times else None
    samples = [u for u in used if u is not None]
    record["device_used_peak"] = max(samples) if samples else None
    try:
        record.update(memory_figures(a.mode, dev, vk))
    except Exception as e:  # noqa: BLE001
        record["memory_error"] = str(e)
    record["ratio_reserved_allocated"] = ratio(record.get("peak_reserved"), record.get("peak_allocated"))
    if vk is not None and "vramkit_stats" in record:
        s = record["vramkit_stats"]
        record["ratio_reserved_in_use"] = ratio(s["peak_reserved"], s["peak_in_use"])
        record["vramkit_malloc_free_ns"] = malloc_free_ns(None, s)
        record["vramkit_per_malloc_ns"] = per_malloc_ns(None, s)
        if vk_before is not None:
            record["vramkit_malloc_free_ns_timed"] = malloc_free_ns(vk_before, s)
            record["vramkit_per_malloc_ns_timed"] = per_malloc_ns(vk_before, s)
        try:
            print(vk.summary(), file=sys.stderr)
        except Exception as e:  # noqa: BLE001
            print(f"vramkit.summary() failed: {e}", file=sys.stderr)
    record["wall_s"] = time.perf_counter() - t_start
    emit(record)
    return status


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.probe is not None:  # a spawned probe
        redirect_stdout()
        set_environment(a.mode)
        sys.path.insert(0, HERE)
        from max_batch import run_probe

        emit(run_probe(a, a.probe))
        sys.stderr.flush()
        os._exit(0)
    redirect_stdout()
    if a.max_batch is not None:
        from max_batch import max_batch

        return max_batch(a)
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
