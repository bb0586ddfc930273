"""vramkit: GPU memory as a budgeted, observable resource, from Python.

This package drives ``libvramkit_capi`` (vramkit's C ABI) through ctypes:

* configuration: :func:`configure`, :func:`set_budget`, :func:`set_memory_fraction`,
  :func:`parse_size`;
* observation: :func:`stats`, :func:`summary`, :func:`trim`, :func:`start_trace`,
  :func:`timeline`, :func:`last_error`;
* raw memory: :func:`malloc`, :func:`free`, :func:`record_stream`, :func:`forget_stream`;
* tests without a GPU: :mod:`vramkit.host`, the host backend's model of streams;
* frameworks: ``vramkit.torch.enable()`` makes vramkit PyTorch's CUDA allocator and
  ``vramkit.cupy.enable()`` CuPy's.

Failures raise :class:`VramkitError` subclasses carrying the library's message:
:class:`OutOfMemoryError` (a ``MemoryError``) when the device or the budget refuses,
:class:`TooLargeError` for a request that can never fit, :class:`InvalidArgumentError`
(a ``ValueError``) for a bad pointer, device or setting, :class:`NoDeviceError`.

The library is loaded at the first call that needs it (see ``vramkit._lib`` for
where it is looked for); importing the package needs no library.
"""

from ._lib import LibraryNotFoundError, library_path
from .config import configure, set_budget, set_memory_fraction
from .errors import (
    ErrorKind,
    InvalidArgumentError,
    NoDeviceError,
    OutOfMemoryError,
    TooLargeError,
    VramkitError,
    last_error,
    last_error_kind,
)
from .memory import forget_stream, free, malloc, record_stream
from .observe import STATS_FIELDS, reset_peaks, start_trace, stats, summary, timeline, trim
from .sizes import format_size, parse_size

__version__ = "0.1.0"

__all__ = [
    "ErrorKind",
    "InvalidArgumentError",
    "LibraryNotFoundError",
    "NoDeviceError",
    "OutOfMemoryError",
    "STATS_FIELDS",
    "TooLargeError",
    "VramkitError",
    "configure",
    "format_size",
    "free",
    "last_error",
    "last_error_kind",
    "library_path",
    "malloc",
    "parse_size",
    "record_stream",
    "reset_peaks",
    "forget_stream",
    "set_budget",
    "set_memory_fraction",
    "start_trace",
    "stats",
    "summary",
    "timeline",
    "trim",
]
