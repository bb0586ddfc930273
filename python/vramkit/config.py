"""Configuring the allocator: budgets, the release threshold, the backend, tracing.

:func:`configure` builds the settings string of ``vramkit_configure`` from Python
values; it is read before a device's first use (budgets and the release threshold
also apply to devices already in use). The same settings can come from the
environment (``VRAMKIT_BUDGET``, ``VRAMKIT_RELEASE_THRESHOLD``, ``VRAMKIT_BACKEND``,
``VRAMKIT_TRACE``, ``VRAMKIT_FOLLOW_LIVE``, ``VRAMKIT_SLACK``, ``VRAMKIT_PAGE_SIZE``),
read once at the library's first call.
"""

from __future__ import annotations

from typing import Mapping, Optional, Union

from . import _args, _lib
from .errors import check, error_from_last
from .observe import stats
from .sizes import MAX_BYTES, Size, parse_size

#: The backends the library knows.
BACKENDS = ("cuda", "host")

#: A budget: bytes or a size string, ``"none"`` for no budget, or one per device.
Budget = Union[Size, Mapping[int, Optional[Size]]]


def _is_none(value: object) -> bool:
    """Whether ``value`` spells "no limit" (``None`` or the string ``"none"``)."""
    return value is None or (isinstance(value, str) and value.strip() == "none")


def _bytes_setting(value: Size, what: str) -> str:
    """A size as the library's text, in plain bytes: ``"1073741824B"``."""
    return f"{parse_size(value, what)}B"


def budget_setting(budget: Budget) -> str:
    """The value of the ``budget`` setting for ``budget``.

    ``"none"`` (or ``None`` inside a per-device mapping) means no budget; a mapping
    ``{0: "70GiB", 1: "60GiB"}`` gives each device its own (``"0:...B,1:...B"``).
    """
    if isinstance(budget, Mapping):
        if not budget:
            raise ValueError("budget is an empty mapping: give at least one {device: size}")
        parts = []
        for device, value in sorted(budget.items(), key=lambda kv: _args.device_index(kv[0], "budget device")):
            index = _args.device_index(device, "budget device")
            text = "none" if _is_none(value) else _bytes_setting(value, f"budget of device {index}")
            parts.append(f"{index}:{text}")
        return ",".join(parts)
    if _is_none(budget):
        return "none"
    return _bytes_setting(budget, "budget")


def settings_string(
    budget: Optional[Budget] = None,
    release_threshold: Optional[Size] = None,
    backend: Optional[str] = None,
    trace: Optional[int] = None,
    follow_live: Optional[bool] = None,
    slack: Optional[float] = None,
    page_size: Optional[Size] = None,
    page_growth: Optional[bool] = None,
    background_unmap: Optional[bool] = None,
) -> str:
    """The ``vramkit_configure`` text for the given values (``None``: left as it is)."""
    pairs = []
    if budget is not None:
        pairs.append(f"budget={budget_setting(budget)}")
    if release_threshold is not None:
        if isinstance(release_threshold, str) and release_threshold.strip() == "all":
            pairs.append("release_threshold=all")
        else:
            pairs.append(f"release_threshold={_bytes_setting(release_threshold, 'release_threshold')}")
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
        pairs.append(f"backend={backend}")
    if trace is not None:
        pairs.append(f"trace={_args.count(trace, 'trace (a capacity in events)')}")
    for name, value in (
        ("follow_live", follow_live),
        ("page_growth", page_growth),
        ("background_unmap", background_unmap),
    ):
        if value is None:
            continue
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, not {value!r}")
        pairs.append(f"{name}={'on' if value else 'off'}")
    if slack is not None:
        if isinstance(slack, bool) or not isinstance(slack, (int, float)):
            raise TypeError(f"slack must be a fraction of the peak in use such as 0.019, not {slack!r}")
        if not 0 <= slack <= 1:
            raise ValueError(f"slack must be between 0 and 1 (a fraction of the peak in use), got {slack!r}")
        pairs.append(f"slack={float(slack)!r}")
    if page_size is not None:
        if isinstance(page_size, str) and page_size.strip().lower() == "default":
            pairs.append("page_size=default")
        else:
            pairs.append(f"page_size={_bytes_setting(page_size, 'page_size')}")
    return ";".join(pairs)


def configure(
    budget: Optional[Budget] = None,
    release_threshold: Optional[Size] = None,
    backend: Optional[str] = None,
    trace: Optional[int] = None,
    follow_live: Optional[bool] = None,
    slack: Optional[float] = None,
    page_size: Optional[Size] = None,
    page_growth: Optional[bool] = None,
    background_unmap: Optional[bool] = None,
) -> str:
    """Sets the allocator's configuration; returns the settings string it applied.

    * ``budget``: the most bytes vramkit hands out per device: an ``int``, a size
      string (``"70GiB"``), ``"none"``, or a mapping ``{device: size}``.
    * ``release_threshold``: cached free bytes kept before memory goes back to the
      device; ``"all"`` (the default) keeps every cached byte.
    * ``backend``: ``"cuda"`` (the default) or ``"host"`` (host memory, for tests).
    * ``trace``: timeline capacity in events (0: off).
    * ``follow_live``: ``True`` (the default) gives free pages inside segments
      back to the device before new memory would take the memory held past the slack
      over the peak in use (physical memory follows what is live, while no pointer
      moves); ``False`` keeps them until :func:`trim` or a refusal.
    * ``slack``: with ``follow_live``, how far the memory held may pass the most ever
      in use, as a fraction (default ``0.019``). Past three quarters of it, free pages
      whose work finished go back; past all of it, an allocation waits for the device
      to give pages back. A larger slack spends memory to save the driver's page
      calls (tens of microseconds per page). It counts in thousandths: values
      round to the nearest 0.001.
    * ``page_size``: the unit in which a segment's physical memory is mapped, given
      back and moved (``"4MiB"``, rounded up to the device's granularity, at most
      ``"1GiB"``; ``"default"``: the granularity, 2 MiB on current GPUs). The
      driver's page calls cost about the same per page whatever its size, while a
      page that holds any live byte stays mapped: larger pages save calls and hold
      more. With ``page_growth`` this is the smallest page.
    * ``page_growth``: ``True`` (the default) doubles the page for each doubling of
      the offset past 1024 pages (2 MiB pages up to 2 GiB of a segment, 4 MiB to
      4 GiB, 8 MiB to 8 GiB, ...): a page stays at most 1/512 of the memory
      below it, so a small live set is followed in small pages and a large one in
      fewer driver calls. ``False``: ``page_size`` everywhere.
    * ``background_unmap``: ``True`` (the default) unmaps the pages given back, and
      the old places of pages moved, on a thread of the library: the driver's unmapping
      (about 30 microseconds a page) leaves the allocation's path (an allocation waits
      for it where it maps pages at the same addresses, and for all of it under
      pressure or when the device refuses memory), and the device gets the memory back
      a moment later (at once on :func:`trim`). Pages a stream freed while its kernels
      may still use them then move to that stream's next request without waiting for
      it. ``False``: inside the allocation, after waiting for the stream.

    Arguments left ``None`` are not changed. Call it before the first allocation:
    the backend, trace, follow_live, slack, page_size, page_growth and background_unmap
    settings take effect at a device's first use.
    Raises ``ValueError``/``TypeError`` for a bad value and
    :class:`~vramkit.InvalidArgumentError` for a setting the library refuses.
    """
    text = settings_string(
        budget,
        release_threshold,
        backend,
        trace,
        follow_live,
        slack,
        page_size,
        page_growth,
        background_unmap,
    )
    if text:
        check(_lib.load().vramkit_configure(text.encode()), f"vramkit_configure({text!r})")
    return text


def set_budget(device: int, budget: Optional[Size]) -> None:
    """Sets one device's budget: bytes, a size string, or ``None``/``"none"`` for none.

    Takes effect at once, also for a device already in use; allocations already made
    are kept, and later requests are refused while they would go over it.
    """
    index = _args.device_index(device)
    n = MAX_BYTES if _is_none(budget) else parse_size(budget, "budget")
    check(_lib.load().vramkit_set_budget(index, n), f"vramkit_set_budget({index}, {n})")



def set_memory_fraction(device: int, fraction: float) -> int:
    """Sets ``device``'s budget to ``fraction`` (in (0, 1]) of its total memory, as
    ``torch.cuda.set_per_process_memory_fraction`` does; returns the budget in bytes.

    Raises ``ValueError`` for a fraction out of range and the library's error where
    the device does not tell its memory size (the host backend does not).
    """
    index = _args.device_index(device)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"fraction must be a number in (0, 1], not {type(fraction).__name__} {fraction!r}")
    f = float(fraction)
    if not 0.0 < f <= 1.0:
        raise ValueError(f"fraction must lie in (0, 1] (a share of the device's memory), got {fraction!r}")
    lib = _lib.load()
    lib.vramkit_set_memory_fraction(f, index)
    # The C function returns nothing; it cleared the thread's last error first.
    if lib.vramkit_last_error_kind() != 0:
        raise error_from_last(f"vramkit_set_memory_fraction({f}, {index})")
    return int(stats(index)["budget"])
