"""The host backend's model of streams, for tests without a GPU.

Under ``backend="host"`` streams are only names (any non-zero integer), and a stream
can be *held*: it "runs work" until resumed, so memory freed on it meanwhile is not
handed to another stream before it passes the free (vramkit, waiting for it,
resumes it). This reproduces, on host memory, the orderings that CUDA streams
impose on vramkit; these functions fail on the CUDA backend.
"""

from __future__ import annotations

from typing import Any

from . import _args, _lib
from .errors import check, raise_last_error


def hold_stream(stream: Any, device: int = 0) -> None:
    """Makes ``stream`` of ``device`` "run work" until :func:`resume_stream`."""
    index, handle = _args.device_index(device), _args.stream_handle(stream)
    check(_lib.load().vramkit_host_hold_stream(index, handle or None), f"vramkit_host_hold_stream({index}, {handle:#x})")


def resume_stream(stream: Any, device: int = 0) -> None:
    """Lets the held ``stream`` of ``device`` finish its work."""
    index, handle = _args.device_index(device), _args.stream_handle(stream)
    check(_lib.load().vramkit_host_resume_stream(index, handle or None), f"vramkit_host_resume_stream({index}, {handle:#x})")


def stream_held(stream: Any, device: int = 0) -> bool:
    """Whether ``stream`` of ``device`` is still held (has not passed its work)."""
    index, handle = _args.device_index(device), _args.stream_handle(stream)
    held = _lib.load().vramkit_host_stream_held(index, handle or None)
    if held < 0:
        raise_last_error(f"vramkit_host_stream_held({index}, {handle:#x})")
    return held == 1
