"""vramkit as CuPy's allocator: arrays compute right, memory returns, refusals raise.
"""

import gc

import vramkit
import vramkit.cupy

vramkit.cupy.enable()

import cupy  # noqa: E402

before = vramkit.stats()
a = cupy.arange(1 << 20, dtype=cupy.float32)
b = a * 2
assert float(b.sum()) == float(sum(range(1 << 20)) * 2)
during = vramkit.stats()
assert during["live"] >= before["live"] + 2, (before, during)

stream = cupy.cuda.Stream(non_blocking=True)
with stream:
    c = cupy.ones((1024, 1024), dtype=cupy.float64)
    d = c @ c
stream.synchronize()
assert float(d[0, 0]) == 1024.0
del a, b, c, d
gc.collect()
cupy.cuda.Device().synchronize()
after = vramkit.stats()
assert after["live"] == before["live"], (before, after)

vramkit.set_budget(0, after["in_use"] + (64 << 20))
try:
    cupy.empty(1 << 30, dtype=cupy.uint8)
except cupy.cuda.memory.OutOfMemoryError as e:
    assert isinstance(e, vramkit.OutOfMemoryError), type(e).__mro__
    assert e.kind == vramkit.ErrorKind.OVER_BUDGET, e.kind
    assert str(e) == vramkit.last_error(), (str(e), vramkit.last_error())
else:
    raise SystemExit("a 1 GiB array was allocated under a 64 MiB budget")
vramkit.set_budget(0, None)
print("OK")
