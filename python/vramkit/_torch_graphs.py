"""CUDA graph capture refused under vramkit, with the reason and what to do.

A captured graph keeps writing the memory its kernels were captured with, every replay.
PyTorch keeps that memory in the graph's private pool until the graph is destroyed; a
pluggable allocator gets no word of the pool, so memory a capture frees (its
intermediates) would go back to vramkit and be handed to other tensors, which every
replay then overwrites. :func:`install` makes ``CUDAGraph.capture_begin`` (behind
``torch.cuda.graph``, ``make_graphed_callables`` and ``torch.compile``'s CUDA graphs)
raise instead.
"""

from __future__ import annotations

from typing import Any

MESSAGE = (
    "CUDA graph capture is not supported with vramkit as PyTorch's allocator: a captured "
    "graph goes on writing the memory it freed during capture, which vramkit would hand to "
    "other tensors. Run without CUDA graphs (torch.compile(mode='default') or "
    "mode='max-autotune-no-cudagraphs' instead of 'reduce-overhead' or 'max-autotune'), or "
    "without vramkit.torch.enable() in this process"
)


class CudaGraphsUnsupportedError(RuntimeError):
    """CUDA graph capture was asked for while vramkit is PyTorch's allocator."""


def install(graph_class: Any) -> None:
    """Makes ``graph_class.capture_begin`` raise :class:`CudaGraphsUnsupportedError` (the
    original stays as ``__wrapped__``)."""
    original = getattr(graph_class, "capture_begin", None)
    if original is None or getattr(original, "__wrapped__", None) is not None:
        return

    def capture_begin(self: Any, *args: Any, **kwargs: Any) -> None:
        raise CudaGraphsUnsupportedError(MESSAGE)

    capture_begin.__wrapped__ = original
    capture_begin.__doc__ = "Refused under vramkit (see vramkit._torch_graphs)."
    graph_class.capture_begin = capture_begin
