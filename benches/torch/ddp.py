"""Data-parallel training (torch.distributed, DistributedDataParallel) of a workload of
workloads.py, one process per rank, every rank under one allocator. Prints one JSON line per
rank and one for the job (everything else goes to stderr).

  python ddp.py WORKLOAD --mode MODE [--world 2] [--steps 8] [--warmup 2] [--batch B]
      [--backend nccl|gloo] [--rank-budget RANK:SIZE] [--timeline PATH] [--job-timeout S]

Ranks take the GPUs round-robin. NCCL refuses two ranks on one GPU, so where there are fewer
GPUs than ranks the backend is gloo, which all-reduces CUDA tensors too (through the host).
Every rank draws its own data (seed + rank); DDP makes every rank's model rank 0's before
the first step.

Per rank: peak reserved and allocated (as run_one.py measures them), median step time, the
losses, and under vramkit the memory that DDP's gradient buckets took (in use before and after
the model is wrapped: the buckets come through the allocator like every other tensor).

--rank-budget 1:2GiB gives rank 1 a vramkit budget that its training cannot fit: the job must
then fail with vramkit's out-of-memory message from that rank, and the other ranks must be
stopped, not left waiting in an all-reduce. The job record says how it ended ("ok",
"failed" with the failing rank and its error, or "hung" past --job-timeout) and how long
the other ranks took to stop.

--timeline PATH: rank 0 under vramkit writes its timeline there (Chrome trace JSON, which
Perfetto opens).
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import time

from harness import HERE, MODES, emit, enable_allocator, is_oom, redirect_stdout, set_environment, sync


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workload")
    p.add_argument("--mode", choices=MODES, default="default")
    p.add_argument("--world", type=int, default=2, help="ranks")
    p.add_argument("--steps", type=int, default=8, help="timed steps")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--batch", type=int, default=None, help="per-rank batch (default: the workload's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=("nccl", "gloo"), default=None,
                   help="default: nccl with a GPU per rank, else gloo")
    p.add_argument("--rank-budget", default=None, metavar="RANK:SIZE",
                   help="a vramkit budget for one rank (vramkit mode)")
    p.add_argument("--timeline", default=None, help="rank 0's vramkit timeline (Chrome trace JSON)")
    p.add_argument("--job-timeout", type=float, default=240.0,
                   help="seconds after which a job still running counts as hung")
    p.add_argument("--collective-timeout", type=float, default=120.0,
                   help="torch.distributed's timeout for one collective")
    a = p.parse_args(argv)
    if a.world < 1:
        p.error("--world must be at least 1")
    if a.rank_budget is not None:
        rank, _, size = a.rank_budget.partition(":")
        if not rank.isdigit() or not size or int(rank) >= a.world:
            p.error(f"--rank-budget {a.rank_budget!r}: write RANK:SIZE with RANK below --world, e.g. 1:2GiB")
        if a.mode != "vramkit":
            p.error("--rank-budget is a vramkit budget: use it with --mode vramkit")
        a.budget_rank, a.budget_size = int(rank), size
    else:
        a.budget_rank, a.budget_size = None, None
    return a


def gpu_count() -> int:
    """GPUs on the machine, without starting CUDA in this process (nvidia-smi -L)."""
    if shutil.which("nvidia-smi") is None:
        return 0
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank: int, a, port: int, gpus: int, results) -> None:
    """One rank: trains and puts its record on `results`; exits 1 on an error."""
    os.environ["VRAMKIT_BENCH_DEVICE"] = f"cuda:{rank % max(gpus, 1)}"
    if a.timeline and rank == 0 and a.mode == "vramkit":
        os.environ["VRAMKIT_TRACE"] = "500000"
    set_environment(a.mode)
    record = {"kind": "ddp_rank", "workload": a.workload, "mode": a.mode, "rank": rank,
              "world": a.world, "backend": a.backend, "losses": [], "step_ms": []}
    status = 0
    try:
        vk = enable_allocator(a.mode)
        import torch
        import torch.distributed as dist
        from datetime import timedelta
        from torch.nn.parallel import DistributedDataParallel as DDP

        sys.path.insert(0, HERE)
        import workloads as W
        from run_one import memory_figures

        W.configure_determinism()
        dev = W.bench_device()
        torch.cuda.set_device(dev)
        record["device"] = str(dev)
        record["gpu"] = torch.cuda.get_device_name(dev)
        if vk is not None and rank == a.budget_rank:
            vk.set_budget(dev.index or 0, a.budget_size)
            record["budget"] = a.budget_size
        dist.init_process_group(a.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=a.world,
                                timeout=timedelta(seconds=a.collective_timeout))
        w = W.WORKLOADS[a.workload](a.batch, a.seed + rank)
        record["batch"] = w.batch
        sync(dev)
        before = vk.stats(dev.index or 0)["in_use"] if vk is not None else None
        # Experts that get no token in a step leave their parameters without gradients.
        w.model = DDP(w.model, device_ids=[dev.index or 0],
                      find_unused_parameters=(a.workload == "moe"))
        sync(dev)
        if vk is not None:
            record["ddp_wrap_in_use_bytes"] = vk.stats(dev.index or 0)["in_use"] - before
            record["trainable_bytes"] = sum(p.numel() * p.element_size()
                                            for p in w.model.parameters() if p.requires_grad)
        for i in range(a.warmup + a.steps):
            sync(dev)
            t = time.perf_counter()
            record["losses"].append(w.step())
            sync(dev)
            if i >= a.warmup:
                record["step_ms"].append((time.perf_counter() - t) * 1e3)
        record["error"] = None
        record.update(memory_figures(a.mode, dev, vk))
        pr, pa = record.get("peak_reserved"), record.get("peak_allocated")
        record["ratio_reserved_allocated"] = pr / pa if pr and pa else None
        times = record["step_ms"]
        record["median_ms"] = statistics.median(times) if times else None
        if vk is not None and a.timeline and rank == 0:
            record["timeline"] = vk.timeline(a.timeline, dev.index or 0)
        if vk is not None:
            print(f"rank {rank}:\n{vk.summary(dev.index or 0)}", file=sys.stderr)
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 - the record says what went wrong
        try:
            oom = is_oom(e)
        except ImportError:  # torch itself is missing
            oom = False
        record["error"] = f"{'oom' if oom else 'error'}: {type(e).__name__}: {str(e)[:1500]}"
        record["oom"] = oom
        record["failed_at"] = time.time()
        status = 1
        print(f"ddp rank {rank}: failed after {len(record['losses'])} steps: {e}", file=sys.stderr)
    results.put(record)
    results.close()
    results.join_thread()
    sys.stderr.flush()
    os._exit(status)


def main(argv=None) -> int:
    import multiprocessing as mp

    a = parse_args(argv)
    redirect_stdout()
    gpus = gpu_count()
    if a.backend is None:
        a.backend = "nccl" if gpus >= a.world else "gloo"
    ctx = mp.get_context("spawn")  # every rank starts CUDA itself; this process never does
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, a, port, gpus, results)) for r in range(a.world)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    records, job = [], {"kind": "ddp_job", "workload": a.workload, "mode": a.mode,
                        "world": a.world, "backend": a.backend, "gpus": gpus,
                        "rank_budget": a.rank_budget}
    failed_at = None
    all_done_at = None
    while True:
        try:
            records.append(results.get(timeout=0.2))
        except queue.Empty:
            pass
        codes = [p.exitcode for p in procs]
        if failed_at is None and "hung_after_s" not in job and any(c not in (None, 0) for c in codes):
            failed_at = time.perf_counter()
            # A rank that failed leaves the others waiting in a collective: stop them.
            for p in procs:
                if p.exitcode is None:
                    p.terminate()
        if all(c is not None for c in codes):
            all_done_at = time.perf_counter()
            break
        if failed_at is not None and time.perf_counter() - failed_at > 10:
            for p in procs:
                if p.exitcode is None:
                    p.kill()
        if time.perf_counter() - t0 > a.job_timeout:
            job["hung_after_s"] = a.job_timeout
            for p in procs:
                if p.exitcode is None:
                    p.kill()
    for p in procs:
        p.join()
    while True:
        try:
            records.append(results.get(timeout=0.5))
        except queue.Empty:
            break
    job["wall_s"] = time.perf_counter() - t0
    job["exit_codes"] = [p.exitcode for p in procs]
    if "hung_after_s" in job:
        job["status"] = "hung"
    elif failed_at is not None:
        job["status"] = "failed"
        job["stop_s"] = (all_done_at or time.perf_counter()) - failed_at
        # The rank that failed first: the others' collectives fail after it.
        bad = sorted((r for r in records if r.get("error")), key=lambda r: r.get("failed_at", 0))
        job["failed_rank"] = bad[0].get("rank") if bad else None
        job["error"] = bad[0].get("error") if bad else None
    else:
        job["status"] = "ok"
    for r in sorted(records, key=lambda r: r.get("rank", 0)):
        emit(r)
    emit(job)
    return 0 if job["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
