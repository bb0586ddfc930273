"""The exceptions raised for the library's failures, chosen by its error kind.

A C function that fails returns -1 (``NULL`` for ``vramkit_malloc``) and leaves a
message and a kind for the calling thread; :func:`raise_last_error` turns them into
one of the classes below, whose message is the library's own text.
"""

from __future__ import annotations

import enum

from . import _lib


class ErrorKind(enum.IntEnum):
    """``enum vramkit_error_kind`` of ``vramkit.h``."""

    OK = 0
    OUT_OF_MEMORY = 1
    OVER_BUDGET = 2
    TOO_LARGE = 3
    INVALID = 4
    NO_DEVICE = 5
    OTHER = 6


class VramkitError(Exception):
    """A failure reported by the vramkit library.

    ``kind`` is the :class:`ErrorKind` (or the raw number, for a kind this package does
    not know) that the library gave for it.
    """

    def __init__(self, message: str, kind: "ErrorKind | int" = ErrorKind.OTHER):
        super().__init__(message)
        self.kind = kind


class OutOfMemoryError(VramkitError, MemoryError):
    """The request was refused now: the device is full (``OUT_OF_MEMORY``) or the
    budget does not allow it (``OVER_BUDGET``); ``kind`` says which."""


class TooLargeError(VramkitError, MemoryError):
    """The request can never be served: it is larger than the device or the budget
    could ever hold (``TOO_LARGE``)."""


class InvalidArgumentError(VramkitError, ValueError):
    """A bad argument: an unknown pointer, device or setting (``INVALID``)."""


class NoDeviceError(VramkitError):
    """No GPU driver, or no such device (``NO_DEVICE``)."""


_CLASSES = {
    ErrorKind.OUT_OF_MEMORY: OutOfMemoryError,
    ErrorKind.OVER_BUDGET: OutOfMemoryError,
    ErrorKind.TOO_LARGE: TooLargeError,
    ErrorKind.INVALID: InvalidArgumentError,
    ErrorKind.NO_DEVICE: NoDeviceError,
}


def last_error() -> str:
    """This thread's last error message from the library; ``""`` if there is none."""
    lib = _lib.load()
    return _lib.read_text(lib.vramkit_last_error)


def last_error_kind() -> "ErrorKind | int":
    """This thread's last error kind (:class:`ErrorKind`; the raw number if unknown)."""
    kind = _lib.load().vramkit_last_error_kind()
    try:
        return ErrorKind(kind)
    except ValueError:
        return kind


def exception_for(kind: "ErrorKind | int", message: str) -> VramkitError:
    """The exception of the class that stands for ``kind``, with ``message``."""
    cls = _CLASSES.get(kind, VramkitError) if isinstance(kind, ErrorKind) else VramkitError
    return cls(message, kind)


def error_from_last(what: str) -> VramkitError:
    """The exception for this thread's last error, after ``what`` failed."""
    kind = last_error_kind()
    message = last_error() or f"{what} failed and the library gave no message"
    return exception_for(kind, message)


def raise_last_error(what: str) -> None:
    """Raises the exception for this thread's last error, after ``what`` failed."""
    raise error_from_last(what)


def check(rc: int, what: str) -> None:
    """Raises the library's error if ``rc`` (a C return code) is -1."""
    if rc != 0:
        raise_last_error(what)
