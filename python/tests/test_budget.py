"""Budgets: refusals raise OutOfMemoryError with a message naming size and budget."""

import re

import pytest

import vramkit
from vramkit.errors import ErrorKind, exception_for

MiB = 1 << 20


def mentions_size(message, n):
    """Whether ``message`` states ``n`` bytes as a number of bytes."""
    return re.search(rf"\b{n}\b", message) is not None


def test_budget_refusal_names_the_request_and_the_budget(no_budget):
    base = vramkit.stats()["in_use"]
    budget = base + 4 * MiB
    vramkit.set_budget(0, budget)
    assert vramkit.stats()["budget"] == budget
    held = vramkit.malloc(2 * MiB)
    try:
        refusals = vramkit.stats()["refusals"]
        with pytest.raises(vramkit.OutOfMemoryError) as err:
            vramkit.malloc(8 * MiB)
        e = err.value
        assert isinstance(e, MemoryError)
        assert isinstance(e, vramkit.VramkitError)
        assert e.kind == ErrorKind.OVER_BUDGET
        message = str(e)
        assert mentions_size(message, 8 * MiB), message
        assert mentions_size(message, budget), message
        assert message == vramkit.last_error()
        assert vramkit.stats()["refusals"] == refusals + 1
        # Under the budget still works.
        small = vramkit.malloc(1 * MiB)
        vramkit.free(small)
    finally:
        vramkit.free(held)


def test_budget_as_string_and_none(no_budget):
    vramkit.set_budget(0, "3GiB")
    assert vramkit.stats()["budget"] == 3 << 30
    vramkit.set_budget(0, "none")
    assert vramkit.stats()["budget"] is None
    vramkit.set_budget(0, "2GB")
    assert vramkit.stats()["budget"] == 2 * 10**9
    vramkit.set_budget(0, None)
    assert vramkit.stats()["budget"] is None


def test_configure_budget_applies_to_a_device_in_use(no_budget):
    # Device 7 has no budget of its own: the global one applies to it.
    vramkit.stats(7)
    vramkit.configure(budget="5GiB")
    assert vramkit.stats(7)["budget"] == 5 << 30
    # Device 0 has one of its own (set_budget, by the fixture), which a global budget leaves.
    assert vramkit.stats(0)["budget"] is None
    vramkit.configure(budget={0: "6GiB"})
    assert vramkit.stats(0)["budget"] == 6 << 30
    vramkit.configure(budget="none")
    assert vramkit.stats(7)["budget"] is None
    assert vramkit.stats(0)["budget"] == 6 << 30


def test_impossible_request_is_a_memory_error(no_budget):
    with pytest.raises(MemoryError) as err:
        vramkit.malloc(1 << 62)
    e = err.value
    assert isinstance(e, (vramkit.OutOfMemoryError, vramkit.TooLargeError))
    assert e.kind in (ErrorKind.OUT_OF_MEMORY, ErrorKind.OVER_BUDGET, ErrorKind.TOO_LARGE)
    assert type(e) is type(exception_for(e.kind, ""))
    assert mentions_size(str(e), 1 << 62), str(e)


@pytest.mark.parametrize(
    "kind, cls, bases",
    [
        (ErrorKind.OUT_OF_MEMORY, vramkit.OutOfMemoryError, (MemoryError,)),
        (ErrorKind.OVER_BUDGET, vramkit.OutOfMemoryError, (MemoryError,)),
        (ErrorKind.TOO_LARGE, vramkit.TooLargeError, (MemoryError,)),
        (ErrorKind.INVALID, vramkit.InvalidArgumentError, (ValueError,)),
        (ErrorKind.NO_DEVICE, vramkit.NoDeviceError, ()),
        (ErrorKind.OTHER, vramkit.VramkitError, ()),
        (99, vramkit.VramkitError, ()),
    ],
)
def test_each_kind_maps_to_its_class(kind, cls, bases):
    e = exception_for(kind, "the message")
    assert type(e) is cls
    assert isinstance(e, vramkit.VramkitError)
    for base in bases:
        assert isinstance(e, base)
    assert e.kind == kind
    assert str(e) == "the message"


def test_set_budget_bad_values(no_budget):
    with pytest.raises(ValueError, match="did you mean"):
        vramkit.set_budget(0, "1gib")
    with pytest.raises(TypeError):
        vramkit.set_budget(0, 1.5)
    with pytest.raises(ValueError, match="device number"):
        vramkit.set_budget(-1, "1GiB")


def test_memory_fraction_needs_the_device_size(no_budget):
    # The host backend does not tell a memory size, so a fraction of it is refused.
    with pytest.raises(vramkit.InvalidArgumentError, match="memory size"):
        vramkit.set_memory_fraction(0, 0.5)
    assert vramkit.stats()["budget"] is None


@pytest.mark.parametrize("fraction, error", [(0.0, ValueError), (1.5, ValueError), (-0.1, ValueError), ("half", TypeError)])
def test_memory_fraction_range(fraction, error):
    with pytest.raises(error, match="fraction"):
        vramkit.set_memory_fraction(0, fraction)
