"""configure: the settings string it builds, and the errors for bad values."""

import pytest

import vramkit
from vramkit.config import settings_string

GiB = 1 << 30


def test_settings_string_in_plain_bytes():
    assert settings_string(budget="70GiB") == f"budget={70 * GiB}B"
    assert settings_string(budget=1024, release_threshold="1GiB") == f"budget=1024B;release_threshold={GiB}B"
    assert settings_string(backend="host", trace=100) == "backend=host;trace=100"
    assert settings_string(budget="none") == "budget=none"
    assert settings_string() == ""
    assert settings_string(follow_live=True, slack=0.019) == "follow_live=on;slack=0.019"
    # A float subclass (numpy's float64 prints as `np.float64(...)`) is sent as a plain float.
    class Wrapped(float):
        def __repr__(self):
            return f"Wrapped({float(self)})"
    assert settings_string(slack=Wrapped(0.06)) == "slack=0.06"
    assert settings_string(page_size="4MiB") == f"page_size={4 << 20}B"
    assert settings_string(page_size="default") == "page_size=default"
    assert settings_string(page_size=" Default ") == "page_size=default"
    assert settings_string(page_growth=False) == "page_growth=off"
    assert settings_string(background_unmap=False) == "background_unmap=off"
    assert settings_string(page_growth=True, follow_live=True) == "follow_live=on;page_growth=on"


def test_per_device_budgets():
    assert settings_string(budget={1: "60GiB", 0: "70GiB"}) == f"budget=0:{70 * GiB}B,1:{60 * GiB}B"
    assert settings_string(budget={0: None}) == "budget=0:none"


def test_configure_returns_what_it_applied(no_budget):
    assert vramkit.configure(release_threshold="1GiB") == f"release_threshold={GiB}B"
    assert vramkit.configure(release_threshold="all") == "release_threshold=all"
    assert vramkit.configure(slack=0.019) == "slack=0.019"
    assert vramkit.configure() == ""


def test_release_threshold_keeps_that_much_cached():
    device = 20
    vramkit.configure(release_threshold=0)
    try:
        ptrs = [vramkit.malloc(4 << 20, device) for _ in range(4)]
        for p in ptrs:
            vramkit.free(p, device)
        s = vramkit.stats(device)
        assert s["reserved"] == s["in_use"], s
    finally:
        vramkit.configure(release_threshold="all")
    ptrs = [vramkit.malloc(4 << 20, device) for _ in range(4)]
    for p in ptrs:
        vramkit.free(p, device)
    s = vramkit.stats(device)
    assert s["reserved"] > s["in_use"], s


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"budget": "70gib"}, ValueError, "did you mean \"GiB\""),
        ({"budget": "lots"}, ValueError, "not a size"),
        ({"budget": 2.5}, TypeError, "number of bytes"),
        ({"budget": {}}, ValueError, "empty mapping"),
        ({"budget": {-1: "1GiB"}}, ValueError, "device number"),
        ({"budget": {"gpu0": "1GiB"}}, TypeError, "device number"),
        ({"release_threshold": -5}, ValueError, "negative"),
        ({"backend": "rocm"}, ValueError, "'cuda', 'host'"),
        ({"trace": -1}, ValueError, "negative"),
        ({"slack": 1.5}, ValueError, "between 0 and 1"),
        ({"slack": float("nan")}, ValueError, "between 0 and 1"),
        ({"slack": "2%"}, TypeError, "fraction"),
        ({"page_size": "4 pages"}, ValueError, "unknown suffix"),
        ({"trace": "many"}, TypeError, "whole number"),
        ({"page_growth": "yes"}, TypeError, "True or False"),
    ],
)
def test_bad_values_say_what_is_wrong(kwargs, error, match):
    with pytest.raises(error, match=match):
        vramkit.configure(**kwargs)


def test_library_refuses_a_page_past_a_gibibyte(no_budget):
    with pytest.raises(vramkit.InvalidArgumentError, match="up to 1GiB"):
        vramkit.configure(page_size="2GiB")


def test_library_refuses_an_unknown_setting():
    lib = vramkit._lib.load()
    assert lib.vramkit_configure(b"no_such_key=1") == -1
    assert vramkit.last_error_kind() == vramkit.ErrorKind.INVALID
    assert "no_such_key" in vramkit.last_error()


def test_library_refusal_becomes_invalid_argument_error():
    lib = vramkit._lib.load()
    with pytest.raises(vramkit.InvalidArgumentError) as err:
        vramkit.errors.check(lib.vramkit_configure(b"budget=12 parsecs"), "configure")
    assert isinstance(err.value, ValueError)
    assert err.value.kind == vramkit.ErrorKind.INVALID
    assert str(err.value) == vramkit.last_error()
