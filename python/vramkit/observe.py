"""Observing the allocator: figures, the summary table, trimming, the timeline."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Optional

from . import _args, _lib
from .errors import check, error_from_last

#: The fields of ``struct vramkit_stats``, in the header's order.
STATS_FIELDS = tuple(name for name, _ in _lib.Stats._fields_)


def stats(device: int = 0) -> Dict[str, Any]:
    """The allocator figures of ``device``: every field of ``struct vramkit_stats``
    (bytes unless named otherwise; ``budget`` is ``None`` where there is none) plus

    * ``reserved_over_in_use``: ``reserved / in_use``, the bytes held from the device
      per byte of live allocations (``None`` while nothing is in use).
    """
    index = _args.device_index(device)
    out = _lib.Stats()
    check(_lib.load().vramkit_get_stats(index, ctypes.byref(out)), f"vramkit_get_stats({index})")
    figures: Dict[str, Any] = {name: int(getattr(out, name)) for name in STATS_FIELDS}
    if figures["budget"] == _lib.NO_BUDGET:
        figures["budget"] = None
    in_use = figures["in_use"]
    figures["reserved_over_in_use"] = figures["reserved"] / in_use if in_use else None
    return figures


def summary(device: int = 0) -> str:
    """The allocator table of ``device``, as text (like ``torch.cuda.memory_summary``)."""
    index = _args.device_index(device)
    lib = _lib.load()
    text = _lib.read_text(lambda buf, cap: lib.vramkit_summary(index, buf, cap))
    if not text:  # the table is never empty: 0 is how vramkit_summary fails
        raise error_from_last(f"vramkit_summary({index})")
    return text


def trim(device: Optional[int] = None) -> None:
    """Gives back every cached free byte of ``device`` to the device (``None``: of
    every device in use). Memory still waiting for other streams' work stays."""
    index = -1 if device is None else _args.device_index(device)
    check(_lib.load().vramkit_trim(index), f"vramkit_trim({index})")


def reset_peaks(device: Optional[int] = None) -> None:
    """Sets every peak of ``device``'s figures (``peak_*``) to the figure it follows
    now (``None``: of every device in use), as ``torch.cuda.reset_peak_memory_stats``
    does."""
    index = -1 if device is None else _args.device_index(device)
    check(_lib.load().vramkit_reset_peaks(index), f"vramkit_reset_peaks({index})")


def start_trace(capacity: int, device: int = 0) -> None:
    """Starts recording the timeline of ``device``: at most ``capacity`` events."""
    index = _args.device_index(device)
    n = _args.count(capacity, "capacity (events)")
    if n == 0:
        raise ValueError("capacity must be at least 1 event to record a timeline")
    check(_lib.load().vramkit_trace_start(index, n), f"vramkit_trace_start({index}, {n})")


def timeline(path: "str | os.PathLike[str]", device: int = 0) -> str:
    """Writes the recorded timeline of ``device`` to ``path`` as Chrome trace JSON
    (open it in Perfetto or chrome://tracing); returns the path.

    Recording starts with :func:`start_trace`, ``configure(trace=N)`` or
    ``VRAMKIT_TRACE``.
    """
    index = _args.device_index(device)
    target = os.fspath(path)
    if not isinstance(target, str):
        target = os.fsdecode(target)
    check(_lib.load().vramkit_trace_save(index, os.fsencode(target)), f"vramkit_trace_save({index}, {target!r})")
    return target
