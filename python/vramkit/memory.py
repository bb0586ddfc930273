"""Allocating and freeing through vramkit directly, by address.

These are thin wrappers of ``vramkit_malloc`` / ``vramkit_free``: the memory is device
memory (host memory under the ``host`` backend) and the caller owns it until it is
freed. Frameworks use them through :mod:`vramkit.torch` and :mod:`vramkit.cupy`.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _args, _lib
from .errors import check, raise_last_error

#: The largest request the C ABI can express (``ssize_t``).
MAX_REQUEST = 2**63 - 1


def malloc(size: int, device: int = 0, stream: Any = 0) -> int:
    """``size`` bytes on ``device`` for work on ``stream``; returns the address.

    ``stream`` is a ``cudaStream_t`` as an ``int`` (0: the legacy default stream) or a
    ``torch.cuda.Stream`` / ``cupy.cuda.Stream``. Size 0 gives a unique address of no
    usable bytes. Raises :class:`~vramkit.OutOfMemoryError` when the device or the
    budget refuses, :class:`~vramkit.TooLargeError` for a request that can never fit.
    """
    n = _args.count(size, "size (bytes)")
    if n > MAX_REQUEST:
        raise ValueError(f"size {n} is more than the largest request, 2**63 - 1 bytes")
    index = _args.device_index(device)
    handle = _args.stream_handle(stream)
    ptr = _lib.load().vramkit_malloc(n, index, handle or None)
    if not ptr:
        raise_last_error(f"vramkit_malloc({n}, {index})")
    return int(ptr)


def free(ptr: int, device: Optional[int] = None, stream: Any = 0, size: int = 0) -> None:
    """Frees ``ptr`` (an address from :func:`malloc`).

    ``device`` and ``size`` may be left out (``None``/0); ``stream`` is the stream
    whose work last uses the memory: the range is reused only after that work (and
    the work of the allocation's stream) has passed this point. Freeing an address
    vramkit does not know raises :class:`~vramkit.InvalidArgumentError` (nothing is
    freed).
    """
    address = _args.pointer(ptr)
    index = -1 if device is None else _args.device_index(device)
    n = _args.count(size, "size (bytes)")
    handle = _args.stream_handle(stream)
    lib = _lib.load()
    lib.vramkit_free(address or None, n, index, handle or None)
    # The C call returns nothing; it cleared the thread's last error first.
    if lib.vramkit_last_error_kind() != 0:
        raise_last_error(f"vramkit_free({address:#x})")


def record_stream(ptr: int, stream: Any) -> None:
    """Declares that the memory at ``ptr`` is also used by work on ``stream``: once
    freed, it is reused only after that stream has passed the free."""
    address = _args.pointer(ptr)
    handle = _args.stream_handle(stream)
    lib = _lib.load()
    lib.vramkit_record_stream(address or None, handle or None)
    if lib.vramkit_last_error_kind() != 0:
        raise_last_error(f"vramkit_record_stream({address:#x})")


def forget_stream(stream: Any) -> None:
    """Waits until the memory freed on ``stream`` has been confirmed passed on every
    device and forgets the stream: call it before destroying a stream you allocated
    on (vramkit records events on a stream after a free, when another stream needs
    the memory)."""
    handle = _args.stream_handle(stream)
    check(_lib.load().vramkit_forget_stream(handle or None), "vramkit_forget_stream")
