"""The timeline: recorded events saved as Chrome trace JSON."""

import json

import pytest

import vramkit


def events_of(data):
    """The event list of a Chrome trace (an object with traceEvents, or a bare list)."""
    return data["traceEvents"] if isinstance(data, dict) else data


def test_timeline_is_valid_json_with_the_events(tmp_path, no_budget):
    vramkit.start_trace(10_000)
    ptrs = [vramkit.malloc(size) for size in (4096, 1 << 20, 12345)]
    for p in ptrs:
        vramkit.free(p)
    path = tmp_path / "timeline.json"
    assert vramkit.timeline(path) == str(path)
    with open(path) as f:
        data = json.load(f)
    events = events_of(data)
    assert isinstance(events, list)
    assert len(events) >= len(ptrs), f"{len(events)} events for {len(ptrs)} allocations and frees"
    assert all(isinstance(e, dict) and "ph" in e for e in events)


def test_timeline_to_an_unwritable_path_raises(tmp_path):
    vramkit.start_trace(100)
    target = tmp_path / "no" / "such" / "folder" / "t.json"
    with pytest.raises(vramkit.VramkitError) as err:
        vramkit.timeline(target)
    assert str(err.value)


def test_start_trace_checks_capacity():
    with pytest.raises(ValueError, match="at least 1"):
        vramkit.start_trace(0)
    with pytest.raises(TypeError, match="whole number"):
        vramkit.start_trace("1000")
