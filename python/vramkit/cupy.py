"""vramkit as CuPy's device allocator.

::

    import vramkit.cupy
    vramkit.cupy.enable(budget="40GiB")
    import cupy
    a = cupy.zeros(1 << 28)          # served by vramkit

:func:`enable` sets ``cupy.cuda.set_allocator`` to a function that takes memory from
``vramkit_malloc`` on the current device and stream and wraps it in
``cupy.cuda.UnownedMemory``; the memory goes back through ``vramkit_free`` when CuPy
drops its last reference, on the stream current then. A refusal raises
:class:`OutOfMemoryError`, which is both ``cupy.cuda.memory.OutOfMemoryError`` and
``vramkit.OutOfMemoryError`` and carries vramkit's message.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

try:
    import cupy as _cupy
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError("vramkit.cupy needs CuPy: install cupy (e.g. cupy-cuda12x) first") from _e

from . import _lib, errors
from .config import Budget, configure
from .observe import stats as _stats
from .sizes import Size

_lock = threading.Lock()
_enabled = False


class OutOfMemoryError(_cupy.cuda.memory.OutOfMemoryError, errors.OutOfMemoryError):
    """A refused allocation: CuPy's ``OutOfMemoryError`` with vramkit's message.

    ``_size``, ``_total`` and ``_limit`` are CuPy's fields (the request, the bytes in
    use, the budget or 0); ``kind`` is vramkit's :class:`~vramkit.ErrorKind`.
    """

    def __init__(self, size: int, total: int, limit: int, message: str, kind: Any):
        self._size = size
        self._total = total
        self._limit = limit
        self.kind = kind
        BaseException.__init__(self, message)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self):
        return (type(self), (self._size, self._total, self._limit, str(self), self.kind))


class _Allocation:
    """Owns one vramkit allocation; frees it when CuPy lets go of it."""

    __slots__ = ("ptr", "size", "device", "stream")

    def __init__(self, ptr: int, size: int, device: int, stream: int):
        self.ptr = ptr
        self.size = size
        self.device = device
        self.stream = stream

    def __del__(self):
        stream = self.stream
        try:
            if _cupy.cuda.runtime.getDevice() == self.device:
                stream = _cupy.cuda.get_current_stream().ptr
        except Exception:  # interpreter shutdown or a lost context: use the allocation's stream
            pass
        _lib.load().vramkit_free(self.ptr, self.size, self.device, stream or None)


def _refusal(size: int, device: int) -> Exception:
    """The exception for this thread's failed ``vramkit_malloc`` of ``size`` bytes."""
    error = errors.error_from_last(f"vramkit_malloc({size}, {device})")
    if not isinstance(error, MemoryError):
        return error
    try:
        figures = _stats(device)
        total, limit = figures["in_use"], figures["budget"]
    except errors.VramkitError:
        total, limit = -1, 0
    return OutOfMemoryError(size, total, limit, str(error), error.kind)


def allocate(size: int) -> "_cupy.cuda.MemoryPointer":
    """CuPy's allocator function: ``size`` bytes from vramkit on the current device
    and stream, as a ``cupy.cuda.MemoryPointer``."""
    device = _cupy.cuda.runtime.getDevice()
    stream = _cupy.cuda.get_current_stream().ptr
    ptr = _lib.load().vramkit_malloc(size, device, stream or None)
    if not ptr:
        raise _refusal(size, device)
    owner = _Allocation(int(ptr), size, device, stream)
    memory = _cupy.cuda.UnownedMemory(int(ptr), size, owner, device)
    return _cupy.cuda.MemoryPointer(memory, 0)


def enable(
    budget: Optional[Budget] = None,
    release_threshold: Optional[Size] = None,
    trace: Optional[int] = None,
) -> None:
    """Makes vramkit CuPy's allocator (arguments as in :func:`vramkit.configure`;
    the backend is CUDA). Arrays made before keep the memory they have."""
    global _enabled
    with _lock:
        configure(budget=budget, release_threshold=release_threshold, backend="cuda", trace=trace)
        _cupy.cuda.set_allocator(allocate)
        _enabled = True


def disable() -> None:
    """Gives CuPy back its default memory pool; arrays from vramkit stay valid and
    are freed through vramkit when dropped."""
    global _enabled
    with _lock:
        _cupy.cuda.set_allocator(_cupy.get_default_memory_pool().malloc)
        _enabled = False


def enabled() -> bool:
    """Whether CuPy allocates through vramkit."""
    return _enabled
