"""vramkit as PyTorch's CUDA allocator.

Call :func:`enable` first thing, before any CUDA tensor exists::

    import vramkit.torch
    vramkit.torch.enable(budget="70GiB")
    import torch
    x = torch.empty(1 << 30, device="cuda")   # served by vramkit

It installs vramkit through ``torch.cuda.memory.CUDAPluggableAllocator``. PyTorch does
not check the pointer such an allocator returns, so by default (``oom="raise"``) a
small C++ shim (``_torch_shim.cpp``, compiled once with
``torch.utils.cpp_extension.load`` and cached) turns a refusal into
``torch.OutOfMemoryError`` with vramkit's message. ``oom="null"`` skips the shim and
hands PyTorch ``vramkit_malloc`` itself: a refusal then gives PyTorch a null pointer,
which it passes on to kernels unchecked. That is unsafe; use it only where a compiler
is missing and the budget is known to hold.

It also routes ``Tensor.record_stream``, ``torch.cuda.empty_cache`` and
``torch.cuda.set_per_process_memory_fraction`` to vramkit, and serves PyTorch's own
figures from vramkit's: ``torch.cuda.memory_allocated``, ``max_memory_allocated``,
``memory_reserved``, ``memory_stats``, ``memory_summary``, ``reset_peak_memory_stats``
and their ``torch.accelerator`` twins, which raise ``RuntimeError`` under a pluggable
allocator otherwise (``vramkit._torch_stats`` says which figures map to which).
:func:`memory_stats` and the functions beside it give the same figures without PyTorch.

CUDA graph capture (``torch.cuda.graph``, ``torch.compile``'s ``reduce-overhead`` and
``max-autotune`` modes) raises ``CudaGraphsUnsupportedError``: a captured graph goes on
writing memory it freed during capture, which a pluggable allocator would hand out again
(``vramkit._torch_graphs``).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Optional

from . import _lib, _torch_graphs, _torch_stats
from .config import Budget, configure, set_memory_fraction
from .observe import stats as _stats
from .observe import trim as _trim
from .sizes import Size

#: The name under which the shim is built in PyTorch's extension cache.
SHIM_NAME = "vramkit_torch_shim"
SHIM_SOURCE = Path(__file__).resolve().parent / "_torch_shim.cpp"
OOM_MODES = ("raise", "null")

_lock = threading.Lock()
_enabled = False
_allocator: Any = None


CudaGraphsUnsupportedError = _torch_graphs.CudaGraphsUnsupportedError


class ShimBuildError(RuntimeError):
    """The C++ shim that raises ``torch.OutOfMemoryError`` could not be built or bound."""


def _import_torch():
    """``torch``, or an ImportError saying that this module needs it."""
    try:
        import torch
    except ImportError as e:
        raise ImportError("vramkit.torch needs PyTorch: install torch (a CUDA build) first") from e
    return torch


def enabled() -> bool:
    """Whether :func:`enable` installed vramkit as PyTorch's CUDA allocator."""
    return _enabled


def _find_ninja() -> None:
    """Puts the ninja of this Python environment on PATH when PATH has none: PyTorch
    runs ``ninja`` by name, and a virtual environment's ``bin`` need not be on PATH."""
    if shutil.which("ninja"):
        return
    folders = [Path(sys.executable).parent]
    try:
        import ninja

        folders.append(Path(ninja.BIN_DIR))
    except (ImportError, AttributeError):
        pass
    for folder in folders:
        if (folder / "ninja").is_file():
            os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
            return


def build_shim(verbose: bool = False) -> Path:
    """Builds (or finds in PyTorch's extension cache) the OOM-raising shim; returns
    the path of its shared library. Needs a C++ compiler and ninja."""
    torch = _import_torch()
    from torch.utils import cpp_extension

    _find_ninja()
    # The PyTorch version is part of the flags, so an upgrade rebuilds the shim.
    flags = ["-O2", f'-DVRAMKIT_TORCH_VERSION="{torch.__version__}"']
    try:
        path = cpp_extension.load(
            name=SHIM_NAME,
            sources=[str(SHIM_SOURCE)],
            extra_cflags=flags,
            with_cuda=False,
            is_python_module=False,
            verbose=verbose,
        )
    except Exception as e:  # compiler, ninja or linker failures come as many types
        raise ShimBuildError(
            f"building vramkit's PyTorch shim ({SHIM_SOURCE.name}) failed: {e}\n"
            "It needs a C++ compiler and ninja (pip install ninja); "
            "vramkit.torch.enable(oom=\"null\") installs vramkit_malloc without the shim, "
            "but then a refused allocation hands PyTorch a null pointer that it does not "
            "check (unsafe)."
        ) from e
    return Path(path)


def _bind_shim(shim: Path) -> None:
    """Points the shim at the vramkit library this package loaded."""
    import ctypes

    lib = ctypes.CDLL(str(shim))
    lib.vramkit_torch_shim_bind.restype = ctypes.c_char_p
    lib.vramkit_torch_shim_bind.argtypes = [ctypes.c_char_p]
    why = lib.vramkit_torch_shim_bind(str(_lib.library_path()).encode())
    if why is not None:
        raise ShimBuildError(f"vramkit's PyTorch shim {shim} could not bind to the library: {why.decode()}")


def enable(
    budget: Optional[Budget] = None,
    release_threshold: Optional[Size] = None,
    trace: Optional[int] = None,
    oom: str = "raise",
) -> None:
    """Makes vramkit PyTorch's CUDA allocator, for the rest of the process.

    Call it before the first CUDA tensor (or any CUDA call through PyTorch): PyTorch
    cannot swap an allocator it has started. ``budget``, ``release_threshold`` and
    ``trace`` are as in :func:`vramkit.configure`; the backend is CUDA. ``oom``:
    ``"raise"`` (default) makes a refusal raise ``torch.OutOfMemoryError`` with
    vramkit's message; ``"null"`` is unsafe (see the module docs).
    """
    global _enabled, _allocator
    if oom not in OOM_MODES:
        raise ValueError(f"oom must be one of {', '.join(map(repr, OOM_MODES))}, got {oom!r}")
    torch = _import_torch()
    with _lock:
        if _enabled:
            raise RuntimeError(
                "vramkit.torch.enable() was already called in this process; change budgets "
                "with vramkit.set_budget() or vramkit.configure()"
            )
        if torch.cuda.is_initialized():
            raise RuntimeError(
                "PyTorch's CUDA state is already initialized, so its allocator can no longer "
                "be replaced: call vramkit.torch.enable() first thing, before any CUDA "
                "tensor, torch.cuda call or library that touches the GPU"
            )
        if not hasattr(torch._C, "_cuda_customAllocator"):
            raise RuntimeError(
                f"this PyTorch ({torch.__version__}) is not built with CUDA: "
                "vramkit.torch needs a CUDA build of PyTorch"
            )
        if oom == "raise":
            path = build_shim()
            _bind_shim(path)
            names = ("vramkit_torch_malloc", "vramkit_torch_free")
        else:
            path = _lib.library_path()
            names = ("vramkit_malloc", "vramkit_free")
        configure(budget=budget, release_threshold=release_threshold, backend="cuda", trace=trace)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(str(path), *names)
        torch.cuda.memory.change_current_allocator(allocator)
        _allocator = allocator
        _patch(torch)
        _enabled = True


def _patch(torch: Any) -> None:
    """Routes ``record_stream``, ``empty_cache``, the memory fraction and PyTorch's memory
    statistics to vramkit, and refuses CUDA graph capture."""
    lib = _lib.load()
    record_stream = torch.Tensor.record_stream
    empty_cache = torch.cuda.memory.empty_cache
    set_fraction = torch.cuda.memory.set_per_process_memory_fraction

    def vramkit_record_stream(self, stream):
        """Tensor.record_stream, also telling vramkit (see torch.Tensor.record_stream)."""
        if self.is_cuda:
            lib.vramkit_record_stream(self.untyped_storage().data_ptr() or None, stream.cuda_stream or None)
        return record_stream(self, stream)

    def vramkit_empty_cache() -> None:
        """Gives every cached free byte of every device back (vramkit's trim)."""
        empty_cache()
        _trim(None)

    def vramkit_set_per_process_memory_fraction(fraction, device=None) -> None:
        """Sets vramkit's budget of ``device`` to ``fraction`` (in (0, 1]) of its memory."""
        set_fraction(fraction, device)  # PyTorch's checks of fraction and device
        index = torch.cuda.current_device() if device is None else torch.cuda._utils._get_device_index(device)
        set_memory_fraction(index, fraction)

    # Each patch keeps PyTorch's function as __wrapped__.
    for fn, original in (
        (vramkit_record_stream, record_stream),
        (vramkit_empty_cache, empty_cache),
        (vramkit_set_per_process_memory_fraction, set_fraction),
    ):
        fn.__wrapped__ = original
    _torch_stats.install(torch._C)
    _torch_graphs.install(torch)
    torch.Tensor.record_stream = vramkit_record_stream
    torch.cuda.empty_cache = torch.cuda.memory.empty_cache = vramkit_empty_cache
    torch.cuda.set_per_process_memory_fraction = vramkit_set_per_process_memory_fraction
    torch.cuda.memory.set_per_process_memory_fraction = vramkit_set_per_process_memory_fraction


def _device(device: Any) -> int:
    """A CUDA ordinal from an int, a ``torch.device`` or ``None`` (the current device)."""
    if device is None:
        return _import_torch().cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    torch = _import_torch()
    return torch.cuda._utils._get_device_index(device)


def memory_stats(device: Any = 0) -> Dict[str, int]:
    """vramkit's figures of ``device`` under the keys of ``torch.cuda.memory_stats``, as
    the patched ``torch.cuda.memory_stats`` gives them (``vramkit._torch_stats`` says which
    figure each key holds): ``allocated_bytes.all.*`` the bytes of live allocations
    (``in_use``), ``reserved_bytes.all.*`` the bytes held from the device,
    ``requested_bytes.all.*`` the bytes asked for, ``allocation.all.*`` the allocations,
    ``num_ooms`` the refused requests; all 0 for a device vramkit has not opened.
    """
    return _torch_stats.flat_stats(_device(device))


def memory_allocated(device: Any = 0) -> int:
    """Bytes of live allocations on ``device`` (``torch.cuda.memory_allocated``)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: Any = 0) -> int:
    """The peak of :func:`memory_allocated` (``torch.cuda.max_memory_allocated``)."""
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: Any = 0) -> int:
    """Bytes held from ``device`` (``torch.cuda.memory_reserved``)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: Any = 0) -> int:
    """The peak of :func:`memory_reserved` (``torch.cuda.max_memory_reserved``)."""
    return memory_stats(device)["reserved_bytes.all.peak"]
