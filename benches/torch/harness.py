"""What run_one.py and max_batch.py share: the allocator mode's environment (set before
torch is imported), the allocator itself, the one JSON line on stdout, device facts."""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("default", "expandable", "vramkit")
GiB = 1024**3
_JSON_FD = None


def set_environment(mode: str) -> dict:
    """The environment of the mode, set before torch is imported. Returns what was changed."""
    changed = {}
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        old = os.environ.pop(key, None)
        if old is not None:
            changed[f"removed_{key}"] = old
    if mode == "expandable":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
    return changed


def redirect_stdout():
    """Everything printed (Python or C) goes to stderr; emit() writes to the real stdout."""
    global _JSON_FD
    sys.stdout.flush()
    _JSON_FD = os.dup(1)
    os.dup2(2, 1)


def emit(record: dict) -> None:
    line = json.dumps(record, allow_nan=True) + "\n"
    if _JSON_FD is None:
        sys.stdout.write(line)
        sys.stdout.flush()
    else:
        os.write(_JSON_FD, line.encode())


def enable_allocator(mode: str):
    """Imports torch with the mode's allocator in place; returns the vramkit module or None."""
    __import__("torch")  # after set_environment(), so that the mode's settings hold

    if mode != "vramkit":
        return None
    sys.path.append(os.path.join(HERE, "..", "..", "python"))  # the checkout's, if not on the path
    import vramkit
    import vramkit.torch

    oom = os.environ.get("VRAMKIT_BENCH_OOM")  # unset: enable()'s default (a refusal raises)
    if oom:
        vramkit.torch.enable(oom=oom)
    else:
        vramkit.torch.enable()
    return vramkit


def versions() -> dict:
    import torch

    from importlib import metadata

    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    for name in ("transformers", "timm", "peft", "cupy-cuda13x", "cupy-cuda12x"):
        try:
            out[name] = metadata.version(name)  # without importing it
        except metadata.PackageNotFoundError:
            if not name.startswith("cupy"):
                out[name] = None
    return out


def device_facts(dev) -> dict:
    import torch

    if dev.type != "cuda":
        return {"device": str(dev), "gpu": None}
    props = torch.cuda.get_device_properties(dev)
    return {"device": str(dev), "gpu": props.name, "gpu_total": props.total_memory,
            "sms": props.multi_processor_count}


def device_used(dev):
    import torch

    if dev.type != "cuda":
        return None
    free, total = torch.cuda.mem_get_info(dev)
    return total - free


def sync(dev):
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return "out of memory" in text or "cudaerrormemoryallocation" in text
