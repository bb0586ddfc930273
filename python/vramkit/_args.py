"""Checks and conversions of the arguments handed to the C library."""

from __future__ import annotations

from typing import Any


def device_index(device: Any, what: str = "device") -> int:
    """``device`` as a CUDA ordinal: an ``int`` >= 0, or an object with an ``index``
    (``torch.device("cuda:1")``) or ``id`` (``cupy.cuda.Device(1)``)."""
    index = device
    if not isinstance(device, int):
        index = getattr(device, "index", None)
        if index is None:
            index = getattr(device, "id", None)
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(
            f"{what} must be a device number such as 0, not {type(device).__name__} {device!r}"
        )
    if index < 0:
        raise ValueError(f"{what} must be a device number >= 0, got {device!r}")
    return index


def stream_handle(stream: Any) -> int:
    """``stream`` as the integer value of a ``cudaStream_t``.

    Takes an ``int`` (0 or ``None``: the legacy default stream), a ``torch.cuda.Stream``
    (its ``cuda_stream``) or a ``cupy.cuda.Stream`` (its ``ptr``).
    """
    if stream is None:
        return 0
    handle = stream
    if not isinstance(stream, int):
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            handle = getattr(stream, "ptr", None)
    if isinstance(handle, bool) or not isinstance(handle, int):
        raise TypeError(
            "stream must be a cudaStream_t as an int, a torch.cuda.Stream or a "
            f"cupy.cuda.Stream, not {type(stream).__name__} {stream!r}"
        )
    if handle < 0:
        raise ValueError(f"stream must be a stream handle >= 0, got {stream!r}")
    return handle


def pointer(ptr: Any, what: str = "ptr") -> int:
    """``ptr`` as an address: an ``int`` >= 0."""
    if isinstance(ptr, bool) or not isinstance(ptr, int):
        raise TypeError(f"{what} must be an address (int), not {type(ptr).__name__} {ptr!r}")
    if ptr < 0 or ptr >= 2**64:
        raise ValueError(f"{what} must be an address in [0, 2**64), got {ptr!r}")
    return ptr


def count(n: Any, what: str) -> int:
    """``n`` as a whole number >= 0 (``bool`` refused)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} must be a whole number (int), not {type(n).__name__} {n!r}")
    if n < 0:
        raise ValueError(f"{what} must not be negative, got {n!r}")
    return n
