"""The --max-batch search of run_one.py: the largest batch size whose first steps run with
only CAP GiB of the GPU free. The rest of the GPU is taken by a ballast of raw cudaMalloc
calls made before PyTorch starts CUDA (outside every allocator's accounting); each probe runs
in a fresh process, forked from this one (which never touches CUDA) or spawned."""

from __future__ import annotations

import json
import os
import sys
import time

from harness import (GiB, HERE, device_facts, emit, enable_allocator, is_oom, set_environment,
                     sync, versions)

RUN_ONE = os.path.join(HERE, "run_one.py")


def make_ballast(cap_bytes: int):
    """Leaves about cap_bytes of the device free with raw cudaMalloc calls made before
    PyTorch touches CUDA. Returns (facts, handles); keep the handles alive."""
    try:
        import cupy

        rt = cupy.cuda.runtime
        mem_info, malloc, via = rt.memGetInfo, rt.malloc, "cupy"
    except ImportError:
        mem_info, malloc, via = _cudart_functions()
    free, total = mem_info()
    want = free - cap_bytes
    handles = []
    if want > 0:
        try:
            handles.append(malloc(want))
        except Exception:  # noqa: BLE001 - one piece did not fit: take it in 1 GiB pieces
            while True:
                free_now, _ = mem_info()
                left = free_now - cap_bytes
                if left <= 0:
                    break
                handles.append(malloc(min(left, GiB)))
    free_after, _ = mem_info()
    return {"ballast_via": via, "ballast_bytes": max(want, 0), "free_before_ballast": free,
            "free_after_ballast": free_after, "device_total": total}, handles


def _cudart_functions():
    import ctypes
    import ctypes.util
    import glob

    names = [ctypes.util.find_library("cudart")]
    for base in sys.path:
        names += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", "libcudart.so*")))
        names += sorted(glob.glob(os.path.join(base, "nvidia", "cuda_runtime", "lib", "libcudart.so*")))
    names += sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"))
    lib = None
    for n in names:
        if not n:
            continue
        try:
            lib = ctypes.CDLL(n)
            break
        except OSError:
            continue
    if lib is None:
        raise RuntimeError("no cupy and no libcudart found for the ballast")

    def mem_info():
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        rc = lib.cudaMemGetInfo(ctypes.byref(f), ctypes.byref(t))
        if rc:
            raise RuntimeError(f"cudaMemGetInfo: error {rc}")
        return f.value, t.value

    def malloc(n):
        p = ctypes.c_void_p()
        rc = lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))
        if rc:
            raise RuntimeError(f"cudaMalloc({n}): error {rc}")
        return p.value

    return mem_info, malloc, "libcudart"


def run_probe(a, batch: int) -> dict:
    """In a fresh process: the ballast, the allocator, the workload at `batch`, its first
    probe-steps steps. Never raises."""
    res = {"batch": batch}
    t0 = time.perf_counter()
    vk = None
    keep = None
    try:
        import workloads as W

        dev = W.bench_device()
        if dev.type == "cuda" and a.cap_bytes:
            facts, keep = make_ballast(a.cap_bytes)
            res.update(facts)
        vk = enable_allocator(a.mode)
        W.configure_determinism()
        w = W.WORKLOADS[a.workload](batch, a.seed)
        for _ in range(a.probe_steps):
            w.step()
        sync(dev)
        res["ok"], res["reason"] = True, None
        res["gpu"] = device_facts(dev)["gpu"]
    except BaseException as e:  # noqa: BLE001 - any failure is this probe's answer
        res["ok"] = False
        res["reason"] = "oom" if is_oom(e) else "error"
        res["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    if vk is not None:
        try:
            s = vk.stats(0)
            res["refusals"] = s["refusals"]
            res["peak_reserved"] = s["peak_reserved"]
            if not res["ok"] and s["refusals"]:
                res["reason"] = "oom"  # a refused malloc reaches torch as a null pointer
        except Exception as e:  # noqa: BLE001
            res["stats_error"] = str(e)
    res["s"] = time.perf_counter() - t0
    del keep
    return res


def _fork_probe(a, batch: int) -> dict:
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child():
        out = run_probe(a, batch)
        try:
            send.send(out)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)  # no teardown: a failed CUDA context may abort in destructors

    proc = ctx.Process(target=child)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    res = None
    if recv.poll(a.probe_timeout):
        try:
            res = recv.recv()
        except EOFError:
            res = None
    proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if res is None:
        res = {"batch": batch, "ok": False, "reason": "crash",
               "error": f"probe process ended with code {proc.exitcode} and no answer",
               "s": time.perf_counter() - t0}
    return res


def _spawn_probe(a, batch: int) -> dict:
    import subprocess

    cmd = [sys.executable, RUN_ONE, a.workload, "--mode", a.mode,
           "--seed", str(a.seed), "--probe", str(batch), "--probe-steps", str(a.probe_steps),
           "--cap-bytes", str(a.cap_bytes or 0)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, timeout=a.probe_timeout, text=True)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if lines:
            return json.loads(lines[-1])
        err = f"probe process ended with code {p.returncode} and no answer"
    except subprocess.TimeoutExpired:
        err = "timeout"
    return {"batch": batch, "ok": False, "reason": "crash", "error": err, "s": time.perf_counter() - t0}


def _fork_broken(res: dict) -> bool:
    text = (res.get("error") or "").lower()
    return not res["ok"] and ("initialization error" in text or "forked subprocess" in text
                              or "cudaerrorinitializationerror" in text)


def search(fits, start: int, limit: int, time_left) -> tuple:
    """The largest batch in [1, limit] for which fits(batch) holds, assuming it holds up to
    some size and not above: doubling (or halving) from start, then bisection. Returns
    (lo, hi): lo the largest size that fit (0: none), hi the smallest that did not (None:
    none failed). Stops early, with hi - lo > 1, once time_left() is false."""
    lo, hi = 0, None
    if fits(start):
        lo = start
        while hi is None and lo < limit and time_left():
            b = min(2 * lo, limit)
            if fits(b):
                lo = b
            else:
                hi = b
    else:
        hi = start
        while lo == 0 and hi > 1 and time_left():
            b = max(1, hi // 2)
            if fits(b):
                lo = b
            else:
                hi = b
    while hi is not None and hi - lo > 1 and time_left():
        b = (lo + hi) // 2
        if fits(b):
            lo = b
        else:
            hi = b
    return lo, hi


def max_batch(a) -> int:
    t_start = time.perf_counter()
    changed = set_environment(a.mode)
    if a.probe_via == "fork":
        # Keep this process free of CUDA: children fork from it (is_available() via NVML).
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    a.cap_bytes = int(a.max_batch * GiB)
    import torch  # noqa: F401 - imported once here, before the forks

    sys.path.insert(0, HERE)
    import workloads as W

    W.preload(a.workload)
    record = {"kind": "max_batch", "workload": a.workload, "mode": a.mode, "cap_gib": a.max_batch,
              "probe_steps": a.probe_steps, "seed": a.seed, "scale": W.bench_scale(),
              "env_changed": changed, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
              **versions()}
    if a.mode == "vramkit":
        record["vramkit_oom"] = os.environ.get("VRAMKIT_BENCH_OOM") or "default"
    if torch.cuda.is_initialized():  # an import started CUDA: forked children could not use it
        a.probe_via = "spawn"
    probes = []
    via = [a.probe_via]

    def probe(batch: int) -> bool:
        res = _fork_probe(a, batch) if via[0] == "fork" else _spawn_probe(a, batch)
        if via[0] == "fork" and _fork_broken(res):
            print("run_one: CUDA cannot start in a forked probe; probing by spawning instead",
                  file=sys.stderr)
            via[0] = "spawn"
            res = _spawn_probe(a, batch)
        probes.append(res)
        print(f"run_one: {a.workload}/{a.mode} batch {batch}: "
              f"{'ok' if res['ok'] else res['reason']} ({res['s']:.1f} s)"
              + ("" if res["ok"] else f" {res.get('error', '')[:160]}"), file=sys.stderr)
        return res["ok"]

    def time_left() -> bool:
        return a.deadline is None or time.time() < a.deadline

    start = min(max(1, a.start_batch or W.default_batch(a.workload)), a.batch_limit)
    lo, hi = search(probe, start, a.batch_limit, time_left)
    complete = (hi is not None and hi - lo <= 1) or lo >= a.batch_limit or (hi == 1)
    first_ok = next((p for p in probes if p["ok"]), {})
    record.update({
        "max_batch": lo, "first_failing": hi, "complete": complete,
        "reached_limit": lo >= a.batch_limit, "probe_via": via[0],
        "failures": sorted({p["reason"] for p in probes if not p["ok"]}),
        "probes": probes, "wall_s": time.perf_counter() - t_start,
        **{k: first_ok.get(k) for k in ("gpu", "ballast_via", "ballast_bytes", "free_before_ballast",
                                          "free_after_ballast", "device_total")},
    })
    emit(record)
    return 0
