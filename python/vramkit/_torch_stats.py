"""PyTorch's own memory statistics, served from vramkit's figures.

Under a pluggable allocator PyTorch's ``torch.cuda.memory_allocated``,
``max_memory_allocated``, ``memory_reserved``, ``memory_stats``, ``memory_summary``,
``reset_peak_memory_stats`` and the ``torch.accelerator`` twins raise ``RuntimeError``
("CUDAPluggableAllocator does not yet support getDeviceStats"), so a training script that
logs its peak memory stops there. :func:`install` replaces the three functions of
``torch._C`` they all call with these, which answer in the caching allocator's shape:

* ``allocated_bytes`` and ``active_bytes``: bytes of live allocations (``in_use``), their
  peak, and the bytes of every allocation made and freed;
* ``allocation`` and ``active``: live allocations, their peak, allocations made and freed;
* ``requested_bytes`` and ``reserved_bytes``: bytes asked for and held, and their peaks;
* ``inactive_split_bytes``: free bytes inside held memory (vramkit's holes, which a trim
  gives back in whole pages, where PyTorch's split blocks cannot be);
* ``segment``: blocks of device memory held (segments that grow and shrink in place);
* ``num_ooms``: refused requests.

vramkit keeps one pool per memory kind, so ``large_pool`` repeats ``all`` and
``small_pool`` is 0. vramkit keeps no peak of holes or segments: their peak repeats the
current figure (a peak is never below it). Figures vramkit does not keep (bytes requested or
reserved over time, cudaMalloc retries, oversize blocks) are 0, as PyTorch reports figures
that do not apply under ``cudaMallocAsync``. Peaks restart with
``reset_peak_memory_stats`` (:func:`vramkit.reset_peaks`); ``reset_accumulated_memory_stats``
restarts the counts of allocations made and freed and of refusals, as PyTorch's does.
A device vramkit has not opened reads 0 everywhere, and reading it opens nothing.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any, Dict, Mapping

from . import _args, _lib
from ._torch_graphs import MARK
from .errors import error_from_last
from .observe import reset_peaks, stats

#: The counters ``reset_accumulated_memory_stats`` restarts.
ACCUMULATED = ("allocations", "releases", "bytes_allocated", "bytes_freed", "refusals")

#: What the counters were at each device's last ``reset_accumulated_memory_stats``.
_base: Dict[int, Dict[str, int]] = {}
_base_lock = threading.Lock()


def _stat(current: int = 0, peak: int = 0, allocated: int = 0, freed: int = 0) -> Dict[str, int]:
    return {"current": current, "peak": peak, "allocated": allocated, "freed": freed}


def _pools(stat: Dict[str, int]) -> Dict[str, Dict[str, int]]:
    return {"all": stat, "large_pool": dict(stat), "small_pool": _stat()}


def _open(device: int) -> bool:
    """Whether vramkit opened ``device``: the figures of a device the program never used
    are all 0, without opening it (a context there would cost that GPU's memory, and a
    logging loop over every GPU would open one on each)."""
    index = _args.device_index(device)
    rc = _lib.load().vramkit_device_open(index)
    if rc < 0:
        raise error_from_last(f"vramkit_device_open({index})")
    return rc == 1


def flat_stats(device: int) -> Dict[str, int]:
    """:func:`nested_stats` flattened as ``torch.cuda.memory_stats`` flattens it
    (``"allocated_bytes.all.current"``, ...), keys sorted."""
    flat: Dict[str, int] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else key, inner)
        else:
            flat[prefix] = value

    walk("", nested_stats(device))
    return dict(sorted(flat.items()))


def nested_stats(device: int) -> Dict[str, Any]:
    """``device``'s figures as ``torch._C._cuda_memoryStats`` gives them (see the module);
    all 0 for a device vramkit has not opened."""
    if not _open(device):
        return _shape(defaultdict(int), defaultdict(int))
    with _base_lock:  # the figures and their base read together, never across a reset
        s = stats(device)
        base = _base.get(device, {})
    return _shape(s, {name: s[name] - base.get(name, 0) for name in ACCUMULATED})


def _shape(s: Mapping[str, int], acc: Mapping[str, int]) -> Dict[str, Any]:
    """The caching allocator's nested figures from vramkit's (``s``) and the accumulated
    counts since the last reset (``acc``)."""
    in_use = _stat(s["in_use"], s["peak_in_use"], acc["bytes_allocated"], acc["bytes_freed"])
    count = _stat(s["live"], s["peak_live"], acc["allocations"], acc["releases"])
    return {
        "num_alloc_retries": 0,
        "num_ooms": acc["refusals"],
        "max_split_size": -1,
        "num_sync_all_streams": 0,
        "num_device_alloc": 0,
        "num_device_free": 0,
        "allocated_bytes": _pools(in_use),
        "active_bytes": _pools(dict(in_use)),
        "requested_bytes": _pools(_stat(s["requested"], s["peak_requested"])),
        "reserved_bytes": _pools(_stat(s["reserved"], s["peak_reserved"])),
        "inactive_split_bytes": _pools(_stat(s["free_in_holes"], s["free_in_holes"])),
        "allocation": _pools(count),
        "active": _pools(dict(count)),
        "segment": _pools(_stat(s["segments"], s["segments"])),
        "inactive_split": _pools(_stat()),
        "oversize_allocations": _stat(),
        "oversize_segments": _stat(),
    }


def reset_accumulated(device: int) -> None:
    """Restarts ``device``'s counts of allocations made and freed and of refusals."""
    if not _open(device):
        return
    with _base_lock:
        s = stats(device)
        _base[device] = {name: s[name] for name in ACCUMULATED}


def reset_peaks_if_open(device: int) -> None:
    """Restarts ``device``'s peaks (:func:`vramkit.reset_peaks`), if vramkit opened it."""
    if _open(device):
        reset_peaks(device)


#: ``torch._C`` function -> what serves it. Each takes the device index.
SERVED = {
    "_cuda_memoryStats": nested_stats,
    "_cuda_resetPeakMemoryStats": reset_peaks_if_open,
    "_cuda_resetAccumulatedMemoryStats": reset_accumulated,
    "_accelerator_getDeviceStats": nested_stats,
    "_accelerator_resetPeakStats": reset_peaks_if_open,
    "_accelerator_resetAccumulatedStats": reset_accumulated,
}


def install(torch_c: Any) -> None:
    """Serves PyTorch's statistics from vramkit: replaces the functions of ``torch._C``
    named in :data:`SERVED` that this PyTorch has (each keeps PyTorch's as
    ``__wrapped__``)."""
    for name, serve in SERVED.items():
        original = getattr(torch_c, name, None)
        if original is None or getattr(original, MARK, False):
            continue

        def served(device: Any = None, *_rest: Any, _serve=serve) -> Any:
            return _serve(_index(torch_c, device))

        served.__name__ = name
        served.__wrapped__ = original
        served.__doc__ = f"vramkit's answer to torch._C.{name} (see vramkit._torch_stats)."
        setattr(served, MARK, True)
        setattr(torch_c, name, served)


def _index(torch_c: Any, device: Any) -> int:
    """The device index PyTorch passes (``None``, which the accelerator functions may
    pass, is the current device)."""
    if device is None:
        return int(torch_c._cuda_getDevice())
    return int(device)
