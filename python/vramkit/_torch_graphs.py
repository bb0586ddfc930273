"""CUDA graph capture refused under vramkit, with the reason and what to do.

A captured graph keeps writing the memory its kernels were captured with, every replay.
PyTorch's own allocator keeps that memory in the graph's private pool until the graph is
destroyed. A pluggable allocator is told of the pool only through hooks vramkit does not
implement (PyTorch calls nothing without them), so memory a capture freed (its
intermediates) would go back to vramkit and be handed to other tensors, which every replay
then overwrites. :func:`install` makes the ways into a capture raise when they are entered,
before they switch streams or run anything:

* ``torch.cuda.graph`` on entry (``torch.compile``'s ``reduce-overhead`` and ``max-autotune``
  modes enter it first), ``CUDAGraph.capture_begin``, and ``make_graphed_callables`` (which
  would warm up on a side stream first);
* ``torch.accelerator.Graph.capture_begin`` (and its entry), where this PyTorch has it;
* as a second guard, the pool calls of ``torch.compile``'s CUDA graphs
  (``torch._C._cuda_beginAllocateCurrentThreadToPool``, ``_cuda_checkPoolLiveAllocations``).
"""

from __future__ import annotations

import importlib
from typing import Any

MESSAGE = (
    "CUDA graph capture is not supported with vramkit as PyTorch's allocator: a captured "
    "graph goes on writing the memory it freed during capture, which vramkit would hand to "
    "other tensors. Run without CUDA graphs (torch.compile(mode='default') or "
    "mode='max-autotune-no-cudagraphs' instead of 'reduce-overhead' or 'max-autotune'), or "
    "without vramkit.torch.enable() in this process"
)

#: The functions of ``torch._C`` through which ``torch.compile``'s CUDA graphs use their pool
#: (``torch.cuda.use_mem_pool`` holds its own reference to the first, and is left alone).
POOL_FUNCTIONS = (
    "_cuda_beginAllocateCurrentThreadToPool",
    "_cuda_checkPoolLiveAllocations",
)


class CudaGraphsUnsupportedError(RuntimeError):
    """CUDA graph capture was asked for while vramkit is PyTorch's allocator."""


#: Set on what vramkit installed in PyTorch, so that it is installed once.
MARK = "__vramkit__"


def _refusal(original: Any) -> Any:
    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise CudaGraphsUnsupportedError(MESSAGE)

    refused.__wrapped__ = original
    refused.__doc__ = "Refused under vramkit (see vramkit._torch_graphs)."
    setattr(refused, MARK, True)
    return refused


def _refuse(owner: Any, name: str) -> None:
    """Replaces ``owner.name``, where it exists and is not refused already."""
    original = getattr(owner, name, None)
    if original is None or getattr(original, MARK, False):
        return
    setattr(owner, name, _refusal(original))


def install(torch: Any) -> None:
    """Makes every way into a CUDA graph capture of ``torch`` raise
    :class:`CudaGraphsUnsupportedError` (each original stays as ``__wrapped__``)."""
    graphs = torch.cuda.graphs
    _refuse(graphs.graph, "__enter__")
    _refuse(graphs.CUDAGraph, "capture_begin")
    _refuse(graphs, "make_graphed_callables")
    _refuse(torch.cuda, "make_graphed_callables")
    try:
        accelerator = importlib.import_module("torch.accelerator.graphs")
    except ImportError:
        accelerator = None
    graph = getattr(accelerator, "Graph", None)
    if graph is not None:
        _refuse(graph, "__enter__")
        _refuse(graph, "capture_begin")
    for name in POOL_FUNCTIONS:
        _refuse(torch._C, name)
