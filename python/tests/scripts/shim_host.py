"""Drives vramkit's PyTorch shim directly, on the host backend (no GPU needed).

Usage: shim_host.py ok | refuse | unbound

* ok: allocates and frees through the shim and checks the memory and vramkit's figures.
* refuse: lets the budget refuse a request. The shim throws c10::OutOfMemoryError;
  with no PyTorch frame above to catch it, the process ends (SIGABRT) and the C++
  runtime prints the exception's type and message on stderr.
* unbound: calls the shim before it is bound to the library: it throws c10::Error
  saying how to install it.
"""

import ctypes
import sys

import vramkit
import vramkit.torch as vt

mode = sys.argv[1]
vramkit.configure(backend="host")
shim_path = vt.build_shim()
shim = ctypes.CDLL(str(shim_path))
malloc = shim.vramkit_torch_malloc
malloc.restype = ctypes.c_void_p
malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
free = shim.vramkit_torch_free
free.restype = None
free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]

if mode == "unbound":
    print("CALLING", flush=True)
    malloc(64, 0, None)
    print("RETURNED", flush=True)
    sys.exit(0)

vt._bind_shim(shim_path)
before = vramkit.stats()
ptr = malloc(1 << 20, 0, None)
assert ptr, "the shim returned NULL for an allocation within budget"
ctypes.memset(ptr, 0x42, 1 << 20)
assert ctypes.string_at(ptr, 1 << 20) == b"\x42" * (1 << 20)
during = vramkit.stats()
assert during["live"] == before["live"] + 1, (before, during)
assert during["requested"] == before["requested"] + (1 << 20)
free(ptr, 1 << 20, 0, None)
after = vramkit.stats()
assert after["live"] == before["live"] and after["releases"] == before["releases"] + 1
zero = malloc(0, 0, None)
free(zero, 0, 0, None)

if mode == "ok":
    print("OK", flush=True)
    sys.exit(0)

assert mode == "refuse", mode
vramkit.set_budget(0, "4MiB")
print("CALLING", flush=True)
malloc(64 << 20, 0, None)
print("RETURNED", flush=True)
