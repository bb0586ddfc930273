"""Stream ordering on the host backend's model of streams.

A held stream "still runs work": memory freed on it must not reach another stream
until it passes the free, unless vramkit waited for it (which resumes it). These
are the host-memory counterparts of the two-stream tests on a GPU. Each test uses a
device of its own, so held streams do not leak into other tests.
"""

import ctypes
import itertools

import pytest

import vramkit
from vramkit import host

A, B, C = 0xA, 0xB, 0xC
SIZE = 1 << 20


def overlaps(p, q, size=SIZE):
    return p < q + size and q < p + size


_devices = itertools.count(11)


@pytest.fixture
def device():
    """A device index of its own for each test."""
    index = next(_devices)
    yield index
    for s in (A, B, C):
        if host.stream_held(s, index):
            host.resume_stream(s, index)


def test_free_on_a_running_stream(device):
    host.hold_stream(A, device)
    p = vramkit.malloc(SIZE, device, A)
    ctypes.memset(p, 1, SIZE)  # A's sentinel
    vramkit.free(p, device, A)
    # The same stream may take it back at once: its work is ordered.
    q = vramkit.malloc(SIZE, device, A)
    assert q == p
    assert host.stream_held(A, device)
    vramkit.free(q, device, A)
    # Another stream gets other memory, or memory that A has passed.
    r = vramkit.malloc(SIZE, device, B)
    if overlaps(r, p):
        assert not host.stream_held(A, device), "B got memory that A still uses"
    ctypes.memset(r, 2, SIZE)
    assert ctypes.string_at(r, SIZE) == b"\x02" * SIZE
    vramkit.free(r, device, B)


def test_record_stream_keeps_memory_from_the_owner(device):
    s = vramkit.malloc(SIZE, device, B)
    vramkit.record_stream(s, C)
    host.hold_stream(C, device)
    vramkit.free(s, device, B)
    assert vramkit.stats(device)["pending_release"] == SIZE
    t = vramkit.malloc(SIZE, device, B)
    if overlaps(t, s):
        assert not host.stream_held(C, device), "B reused memory that C still reads"
    host.resume_stream(C, device)
    vramkit.free(t, device, B)
    u = vramkit.malloc(SIZE, device, B)
    assert vramkit.stats(device)["pending_release"] == 0
    vramkit.free(u, device, B)


def test_free_with_another_stream_counts_as_its_use(device):
    host.hold_stream(C, device)
    v = vramkit.malloc(SIZE, device, B)
    vramkit.free(v, device, C)
    assert vramkit.stats(device)["pending_release"] == SIZE
    w = vramkit.malloc(SIZE, device, B)
    if overlaps(w, v):
        assert not host.stream_held(C, device), "B reused memory that C still uses"
    vramkit.free(w, device, B)


def test_hold_and_resume(device):
    host.hold_stream(A, device)
    assert host.stream_held(A, device)
    host.resume_stream(A, device)
    assert not host.stream_held(A, device)


def test_bad_device_is_refused_by_the_library():
    with pytest.raises(vramkit.InvalidArgumentError, match="0 to 63"):
        host.hold_stream(A, 64)
