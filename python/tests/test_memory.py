"""malloc/free on the host backend: the memory is real, distinct and stays intact."""

import ctypes
import random
import threading

import pytest

import vramkit


def fill(ptr, size, byte):
    ctypes.memset(ptr, byte, size)


def read(ptr, size):
    return ctypes.string_at(ptr, size)


def test_round_trip_writes_and_reads_the_memory(no_budget):
    size = 1 << 20
    ptr = vramkit.malloc(size)
    try:
        pattern = bytes(random.Random(1).randrange(256) for _ in range(4096)) * (size // 4096)
        ctypes.memmove(ptr, pattern, size)
        assert read(ptr, size) == pattern
    finally:
        vramkit.free(ptr, 0)


def test_streams_and_sizes_are_passed_through(no_budget):
    ptr = vramkit.malloc(4096, device=0, stream=0)
    fill(ptr, 4096, 0x5A)
    assert read(ptr, 4096) == b"\x5a" * 4096
    vramkit.free(ptr, device=0, stream=0, size=4096)


def test_size_zero_gives_distinct_pointers(no_budget):
    a = vramkit.malloc(0)
    b = vramkit.malloc(0)
    try:
        assert a and b and a != b
    finally:
        vramkit.free(a)
        vramkit.free(b)


def test_live_allocations_do_not_overlap(no_budget):
    rng = random.Random(7)
    sizes = [rng.choice([1, 7, 64, 255, 4096, 100_000, 1 << 20]) for _ in range(200)]
    ptrs = [vramkit.malloc(s) for s in sizes]
    try:
        ranges = sorted(zip(ptrs, sizes))
        for (p, s), (q, _) in zip(ranges, ranges[1:]):
            assert p + s <= q, f"allocation at {p:#x} of {s} bytes overlaps the one at {q:#x}"
    finally:
        for p in ptrs:
            vramkit.free(p)


def test_freed_memory_is_reused_without_touching_live_neighbours(no_budget):
    keep = [vramkit.malloc(8192) for _ in range(16)]
    for i, p in enumerate(keep):
        fill(p, 8192, i + 1)
    churn = [vramkit.malloc(8192) for _ in range(64)]
    for p in churn:
        fill(p, 8192, 0xEE)
        vramkit.free(p)
    again = [vramkit.malloc(8192) for _ in range(64)]
    for p in again:
        fill(p, 8192, 0xDD)
    for i, p in enumerate(keep):
        assert read(p, 8192) == bytes([i + 1]) * 8192
    for p in keep + again:
        vramkit.free(p)


def test_many_threads_at_once_get_distinct_memory_and_keep_their_data(no_budget):
    threads, rounds = 8, 300
    errors = []
    live_lock = threading.Lock()
    live = {}  # ptr -> (size, owner) of every allocation alive right now
    start = threading.Barrier(threads)

    def work(tid):
        rng = random.Random(tid)
        mine = []
        start.wait()
        try:
            for r in range(rounds):
                size = rng.choice([16, 100, 4096, 65536, 300_000])
                ptr = vramkit.malloc(size)
                with live_lock:
                    for other, (osize, owner) in live.items():
                        if ptr < other + osize and other < ptr + size:
                            errors.append(f"thread {tid}: {ptr:#x}+{size} overlaps {other:#x}+{osize} of {owner}")
                    live[ptr] = (size, tid)
                byte = (tid * 31 + r) % 255 + 1
                fill(ptr, size, byte)
                mine.append((ptr, size, byte))
                if len(mine) > 8 or rng.random() < 0.4:
                    p, s, b = mine.pop(rng.randrange(len(mine)))
                    if read(p, s) != bytes([b]) * s:
                        errors.append(f"thread {tid}: the {s} bytes at {p:#x} were overwritten")
                    with live_lock:
                        del live[p]
                    vramkit.free(p)
            for p, s, b in mine:
                if read(p, s) != bytes([b]) * s:
                    errors.append(f"thread {tid}: the {s} bytes at {p:#x} were overwritten")
                with live_lock:
                    del live[p]
                vramkit.free(p)
        except Exception as e:  # reported below: a failure in a thread must fail the test
            errors.append(f"thread {tid}: {e!r}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, "\n".join(errors[:10])
    assert not live


def test_free_of_an_unknown_pointer_is_reported_and_survived(no_budget):
    # A different error first, so that the one checked below is the free's own.
    with pytest.raises(vramkit.InvalidArgumentError):
        vramkit.errors.check(vramkit._lib.load().vramkit_configure(b"no_such_key=1"), "configure")
    assert "0xdead0000" not in vramkit.last_error()
    bogus = 0xDEAD0000
    with pytest.raises(vramkit.InvalidArgumentError) as err:
        vramkit.free(bogus)
    message = vramkit.last_error()
    assert "0xdead0000" in message, message
    assert str(err.value) == message
    assert vramkit.last_error_kind() == vramkit.ErrorKind.INVALID
    # The allocator still works.
    ptr = vramkit.malloc(64)
    fill(ptr, 64, 1)
    vramkit.free(ptr)


def test_bad_arguments_are_refused_before_the_library(no_budget):
    with pytest.raises(ValueError, match="negative"):
        vramkit.malloc(-1)
    with pytest.raises(TypeError, match="whole number"):
        vramkit.malloc(1.5)
    with pytest.raises(ValueError, match="2\\*\\*63"):
        vramkit.malloc(2**63)
    with pytest.raises(ValueError, match="device number"):
        vramkit.malloc(16, device=-2)
    with pytest.raises(TypeError, match="stream"):
        vramkit.malloc(16, stream="default")
    with pytest.raises(TypeError, match="address"):
        vramkit.free("0x10")


def test_record_stream_on_a_live_pointer(no_budget):
    ptr = vramkit.malloc(256)
    vramkit.record_stream(ptr, 0)
    fill(ptr, 256, 3)
    assert read(ptr, 256) == b"\x03" * 256
    vramkit.free(ptr)
