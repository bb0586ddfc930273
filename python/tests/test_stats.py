"""stats, summary and trim against a model of what was allocated."""

import ctypes

import pytest

import vramkit


def delta(after, before, key):
    return after[key] - before[key]


def test_stats_has_every_header_field_and_the_ratio():
    s = vramkit.stats(0)
    assert set(vramkit.STATS_FIELDS) <= set(s)
    assert "reserved_over_in_use" in s
    assert all(isinstance(s[k], int) for k in vramkit.STATS_FIELDS if k != "budget")
    assert s["budget"] is None or isinstance(s["budget"], int)


def test_figures_follow_a_model_of_live_allocations(no_budget):
    sizes = [1, 100, 4096, 5000, 1 << 20, 3 << 20, 12345, 64]
    before = vramkit.stats()
    ptrs = [vramkit.malloc(s) for s in sizes]
    during = vramkit.stats()
    assert delta(during, before, "requested") == sum(sizes)
    assert delta(during, before, "live") == len(sizes)
    assert delta(during, before, "allocations") == len(sizes)
    assert delta(during, before, "releases") == 0
    assert delta(during, before, "malloc_calls") == len(sizes)
    assert delta(during, before, "in_use") >= sum(sizes)
    assert during["reserved"] >= during["in_use"] >= during["requested"]
    assert during["peak_requested"] >= during["requested"]
    assert during["peak_in_use"] >= during["in_use"]
    assert during["peak_reserved"] >= during["reserved"]
    assert during["reserved_over_in_use"] == pytest.approx(during["reserved"] / during["in_use"])

    freed = ptrs[::2]
    for p in freed:
        vramkit.free(p)
    after = vramkit.stats()
    kept = sizes[1::2]
    assert delta(after, before, "requested") == sum(kept)
    assert delta(after, before, "live") == len(kept)
    assert delta(after, during, "releases") == len(freed)
    assert delta(after, during, "free_calls") == len(freed)
    assert after["peak_requested"] >= during["requested"]

    for p in ptrs[1::2]:
        vramkit.free(p)
    end = vramkit.stats()
    assert end["requested"] == before["requested"]
    assert end["live"] == before["live"]
    assert delta(end, before, "releases") == len(sizes)


def test_summary_shows_the_figures(no_budget):
    ptrs = [vramkit.malloc(1 << 20) for _ in range(3)]
    try:
        text = vramkit.summary(0)
        s = vramkit.stats(0)
    finally:
        for p in ptrs:
            vramkit.free(p)
    assert "\0" not in text
    assert "reserved" in text
    # The counts of the figures appear in the table.
    assert f"{s['live']} live" in text, text
    assert f"{s['allocations']} allocated" in text, text
    assert f"{s['releases']} released" in text, text


def test_summary_reads_long_text_whole(no_budget):
    # The two-call pattern: the whole text comes back whatever its length.
    lib = vramkit._lib.load()
    whole = vramkit.summary(0)
    needed = lib.vramkit_summary(0, None, 0)
    assert needed == len(whole.encode())
    small = ctypes.create_string_buffer(8)
    assert lib.vramkit_summary(0, small, 8) == needed
    assert small.value == whole.encode()[:7]


def test_trim_gives_cached_memory_back(no_budget):
    ptrs = [vramkit.malloc(4 << 20) for _ in range(8)]
    for p in ptrs:
        vramkit.free(p)
    cached = vramkit.stats()
    assert cached["reserved"] > cached["in_use"], "freed memory was not kept cached; nothing to trim"
    vramkit.trim(0)
    trimmed = vramkit.stats()
    assert trimmed["reserved"] < cached["reserved"]
    assert trimmed["in_use"] == cached["in_use"]


def test_trim_of_every_device(no_budget):
    p = vramkit.malloc(4 << 20)
    vramkit.free(p)
    before = vramkit.stats()["reserved"]
    vramkit.trim()
    assert vramkit.stats()["reserved"] <= before


def test_stats_of_a_bad_device_argument():
    with pytest.raises(ValueError, match="device number"):
        vramkit.stats(-1)
    with pytest.raises(TypeError, match="device number"):
        vramkit.stats("cuda:0")
