"""Finding and loading ``libvramkit_capi``, with the prototypes of its C ABI.

The library is looked for, in this order:

1. the path in the environment variable ``VRAMKIT_LIBRARY``;
2. the copy installed inside this package (``vramkit/_native/``) by ``pip install``;
3. the Cargo build of the checkout this package sits in (``<repo>/target/release``,
   or ``$CARGO_TARGET_DIR/release``), when it is used straight from the repository.

The prototypes follow ``vramkit.h`` (also installed in ``vramkit/_native/``) one for
one; :class:`Stats` mirrors ``struct vramkit_stats`` field for field.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from ctypes import (
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_ssize_t,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import List, Optional

#: The file name of the library on this platform.
LIBRARY_NAME = "libvramkit_capi.dylib" if sys.platform == "darwin" else "libvramkit_capi.so"

_PACKAGE_DIR = Path(__file__).resolve().parent
#: Where ``pip install`` puts the library and the header.
NATIVE_DIR = _PACKAGE_DIR / "_native"


class LibraryNotFoundError(ImportError):
    """``libvramkit_capi`` could not be found or loaded."""


class Stats(Structure):
    """``struct vramkit_stats``: one device's allocator figures, in bytes unless named."""

    _fields_ = [
        ("requested", c_uint64),
        ("in_use", c_uint64),
        ("reserved", c_uint64),
        ("peak_requested", c_uint64),
        ("peak_in_use", c_uint64),
        ("peak_reserved", c_uint64),
        ("live", c_uint64),
        ("allocations", c_uint64),
        ("releases", c_uint64),
        ("refusals", c_uint64),
        ("budget", c_uint64),
        ("free_in_holes", c_uint64),
        ("largest_free", c_uint64),
        ("pending_release", c_uint64),
        ("malloc_calls", c_uint64),
        ("malloc_ns", c_uint64),
        ("free_calls", c_uint64),
        ("free_ns", c_uint64),
        ("device_free", c_uint64),
        ("device_total", c_uint64),
        ("page_unmaps", c_uint64),
        ("unmapped_bytes", c_uint64),
        ("page_maps", c_uint64),
        ("mapped_bytes", c_uint64),
        ("page_moves", c_uint64),
        ("moved_bytes", c_uint64),
        ("grow_ns", c_uint64),
        ("page_ns", c_uint64),
        ("give_back_ns", c_uint64),
        ("stream_wait_ns", c_uint64),
        ("pages", c_uint64),
        ("page_wait_ns", c_uint64),
        ("peak_live", c_uint64),
        ("bytes_allocated", c_uint64),
        ("bytes_freed", c_uint64),
        ("segments", c_uint64),
    ]


#: The ``VRAMKIT_ABI_VERSION`` these prototypes follow.
ABI_VERSION = 5

#: ``UINT64_MAX``: "none" in ``vramkit_set_budget`` and ``vramkit_stats.budget``.
NO_BUDGET = 2**64 - 1

#: Every function of ``vramkit.h``: name -> (restype, argtypes).
PROTOTYPES = {
    "vramkit_abi_version": (c_uint32, []),
    "vramkit_malloc": (c_void_p, [c_ssize_t, c_int, c_void_p]),
    "vramkit_free": (None, [c_void_p, c_ssize_t, c_int, c_void_p]),
    "vramkit_init": (None, [c_int]),
    "vramkit_empty_cache": (None, []),
    "vramkit_set_memory_fraction": (None, [c_double, c_int]),
    "vramkit_record_stream": (None, [c_void_p, c_void_p]),
    "vramkit_forget_stream": (c_int, [c_void_p]),
    "vramkit_configure": (c_int, [c_char_p]),
    "vramkit_set_budget": (c_int, [c_int, c_uint64]),
    "vramkit_get_stats": (c_int, [c_int, POINTER(Stats)]),
    "vramkit_device_open": (c_int, [c_int]),
    "vramkit_summary": (c_size_t, [c_int, c_char_p, c_size_t]),
    "vramkit_last_error": (c_size_t, [c_char_p, c_size_t]),
    "vramkit_last_error_kind": (c_int, []),
    "vramkit_trim": (c_int, [c_int]),
    "vramkit_reset_peaks": (c_int, [c_int]),
    "vramkit_trace_start": (c_int, [c_int, c_size_t]),
    "vramkit_trace_save": (c_int, [c_int, c_char_p]),
    "vramkit_host_hold_stream": (c_int, [c_int, c_void_p]),
    "vramkit_host_resume_stream": (c_int, [c_int, c_void_p]),
    "vramkit_host_stream_held": (c_int, [c_int, c_void_p]),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_path: Optional[Path] = None


def repo_root() -> Optional[Path]:
    """The repository this package sits in (``<repo>/python/vramkit``), if it does."""
    root = _PACKAGE_DIR.parent.parent
    if (root / "Cargo.toml").is_file() and (root / "capi" / "include" / "vramkit.h").is_file():
        return root
    return None


def candidates() -> List[Path]:
    """The places the library is looked for, in order (see the module docs)."""
    env = os.environ.get("VRAMKIT_LIBRARY")
    if env:
        return [Path(env)]
    found = [NATIVE_DIR / LIBRARY_NAME]
    root = repo_root()
    if root is not None:
        target = os.environ.get("CARGO_TARGET_DIR")
        if target:
            found.append(Path(target) / "release" / LIBRARY_NAME)
        found.append(root / "target" / "release" / LIBRARY_NAME)
    return found


def _not_found(tried: List[Path]) -> LibraryNotFoundError:
    """The error for a library that is nowhere, saying how to get one."""
    where = "\n".join(f"  {p}" for p in tried)
    if os.environ.get("VRAMKIT_LIBRARY"):
        hint = "VRAMKIT_LIBRARY names a file that does not exist: point it at a built libvramkit_capi"
    else:
        hint = (
            "install the package with `pip install ./python` from the vramkit repository "
            "(it builds the library with cargo), or build it with "
            "`cargo build --release -p vramkit-capi` and set VRAMKIT_LIBRARY to the "
            f"resulting {LIBRARY_NAME}"
        )
    return LibraryNotFoundError(f"vramkit's C library ({LIBRARY_NAME}) was not found; tried:\n{where}\n{hint}")


def _declare(lib: ctypes.CDLL, path: Path) -> None:
    """Sets restype and argtypes of every function of the header on ``lib``."""
    for name, (restype, argtypes) in PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LibraryNotFoundError(
                f"{path} has no function {name}: the library is older or newer than this "
                "package; rebuild both from the same checkout"
            ) from None
        fn.restype = restype
        fn.argtypes = argtypes
    version = lib.vramkit_abi_version()
    if version != ABI_VERSION:
        raise LibraryNotFoundError(
            f"{path} has C ABI version {version}, this package speaks version {ABI_VERSION}: "
            "rebuild both from the same checkout"
        )


def load() -> ctypes.CDLL:
    """The loaded library, with its prototypes declared (loaded once per process)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = candidates()
        for path in tried:
            if not path.is_file():
                continue
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as e:
                raise LibraryNotFoundError(f"vramkit's C library at {path} could not be loaded: {e}") from e
            _declare(lib, path)
            _path = path.resolve()
            _lib = lib
            return lib
        raise _not_found(tried)


def library_path() -> Path:
    """The file the library was loaded from (loading it first if need be)."""
    load()
    assert _path is not None
    return _path


def read_text(fill) -> str:
    """Text from a C function that fills ``(buf, cap)`` and returns the length of the
    whole text (``vramkit_summary``, ``vramkit_last_error``): read again with a larger
    buffer while it did not fit."""
    cap = 512
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = fill(buf, cap)
        if n < cap:
            return buf.value.decode("utf-8", errors="replace")
        cap = n + 1
