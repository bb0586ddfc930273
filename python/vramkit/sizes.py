"""Byte sizes written as text: ``"70GiB"``, ``"512MiB"``, ``"1.5GB"``.

The suffixes are those of the C library's settings: ``B``, ``KiB``, ``MiB``, ``GiB``,
``TiB`` (powers of 1024) and ``KB``, ``MB``, ``GB``, ``TB`` (powers of 1000), spelled
exactly so. Sizes are turned into whole numbers of bytes here, so the library is only
ever handed plain byte counts.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Union

#: The multiplier of each suffix the library knows.
UNITS = {
    "B": 1,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}

#: The largest value a size can have (the library's sizes are 64-bit unsigned).
MAX_BYTES = 2**64 - 1

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")

Size = Union[int, str]


def _suggest(unit: str) -> str:
    """A hint naming the accepted spelling of a unit written in the wrong case."""
    for known in UNITS:
        if known.lower() == unit.lower():
            return f' (did you mean "{known}"? suffixes are case-sensitive)'
    return ""


def parse_size(value: Size, what: str = "size") -> int:
    """The number of bytes that ``value`` stands for.

    ``value`` is an ``int`` (bytes) or a string: a number, optionally with a fraction,
    followed by one of the suffixes in :data:`UNITS` (``"70GiB"``, ``"1.5 GB"``,
    ``"4096"``; a bare number is bytes). ``what`` names the value in error messages.

    Raises ``ValueError`` for a negative, fractional-byte, too large or badly written
    size and ``TypeError`` for anything that is neither an ``int`` nor a ``str``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(
            f"{what} must be a number of bytes (int) or a string such as \"70GiB\", "
            f"not {type(value).__name__} {value!r}"
        )
    if isinstance(value, int):
        n = value
    else:
        match = _SIZE.match(value)
        if match is None:
            raise ValueError(
                f"{what} {value!r} is not a size: write a number of bytes followed by "
                f"one of the suffixes {', '.join(UNITS)}, such as \"70GiB\" or \"512MiB\""
            )
        number, unit = match.groups()
        unit = unit or "B"
        if unit not in UNITS:
            raise ValueError(
                f"{what} {value!r} has the unknown suffix {unit!r}{_suggest(unit)}: "
                f"use one of {', '.join(UNITS)}"
            )
        exact = Fraction(number) * UNITS[unit]
        if exact.denominator != 1:
            raise ValueError(
                f"{what} {value!r} is not a whole number of bytes ({float(exact)} B): "
                "use a smaller unit or fewer decimals"
            )
        n = int(exact)
    if n < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    if n > MAX_BYTES:
        raise ValueError(f"{what} {value!r} is more than 2**64 - 1 bytes")
    return n


def format_size(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it readable: ``"1.50 GiB"``."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if n >= UNITS[unit]:
            return f"{n / UNITS[unit]:.2f} {unit}"
    return f"{n} B"
