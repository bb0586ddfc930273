"""enable() before CUDA only; memory_stats, empty_cache and the memory fraction.

Usage: torch_patches.py late | patches
* late: CUDA is started first; enable() must refuse with a RuntimeError saying to
  call it first thing.
* patches: under vramkit, checks memory_stats against the tensors made, PyTorch's
  own statistics (torch.cuda.memory_allocated, max_memory_allocated,
  reset_peak_memory_stats, memory_summary, torch.accelerator's) answering with
  vramkit's figures, torch.cuda.empty_cache lowering vramkit's reserved bytes,
  set_per_process_memory_fraction setting vramkit's budget, and CUDA graph capture
  refused with its reason.
"""

import sys

mode = sys.argv[1]

if mode == "late":
    import torch

    torch.zeros(1, device="cuda")
    import vramkit.torch

    try:
        vramkit.torch.enable()
    except RuntimeError as e:
        assert "first thing" in str(e), str(e)
        assert not vramkit.torch.enabled()
        print("OK")
        sys.exit(0)
    raise SystemExit("enable() after CUDA started did not raise")

import vramkit  # noqa: E402
import vramkit.torch  # noqa: E402

vramkit.torch.enable()
assert vramkit.torch.enabled()
import torch  # noqa: E402

MiB = 1 << 20
xs = [torch.ones(64 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
ms = vramkit.torch.memory_stats()
assert ms["allocated_bytes.all.current"] >= 256 * MiB, ms
assert ms["reserved_bytes.all.current"] >= ms["allocated_bytes.all.current"], ms
assert ms["allocation.all.current"] >= 4, ms
assert vramkit.torch.memory_allocated() == ms["allocated_bytes.all.current"]
assert vramkit.torch.max_memory_allocated(torch.device("cuda:0")) >= 256 * MiB

# PyTorch's own functions, which raise under a pluggable allocator unless served.
s = vramkit.stats()
assert torch.cuda.memory_allocated() == s["in_use"], (torch.cuda.memory_allocated(), s)
assert torch.cuda.memory_reserved() == s["reserved"]
assert torch.cuda.max_memory_allocated() == s["peak_in_use"] >= 256 * MiB
assert torch.cuda.memory_stats()["allocation.all.current"] == s["live"]
assert "Allocated memory" in torch.cuda.memory_summary()
if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "memory_allocated"):
    assert torch.accelerator.memory_allocated() == s["in_use"]
big = torch.empty(512 * MiB, dtype=torch.uint8, device="cuda")
del big
torch.cuda.reset_peak_memory_stats()
in_use = vramkit.stats()["in_use"]
assert torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated() == in_use
small = torch.empty(MiB, dtype=torch.uint8, device="cuda")
assert torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated()
del small
torch.cuda.reset_accumulated_memory_stats()
assert torch.cuda.memory_stats()["allocation.all.allocated"] == 0

del xs
torch.cuda.synchronize()
cached = vramkit.stats()["reserved"]
torch.cuda.empty_cache()
trimmed = vramkit.stats()["reserved"]
assert trimmed < cached, (cached, trimmed)

torch.cuda.set_per_process_memory_fraction(0.5)
s = vramkit.stats()
assert s["device_total"] > 0, s
assert abs(s["budget"] - s["device_total"] // 2) <= MiB, s
try:
    torch.empty(int(s["device_total"] * 0.6), dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError:
    pass
else:
    raise SystemExit("a request over the memory fraction was served")

a = torch.cuda.Stream()
t = torch.ones(MiB, device="cuda")
t.record_stream(a)  # goes through vramkit's record_stream, then PyTorch's
del t

# CUDA graphs are refused on entry, before the capture's side stream is made current.
stream = torch.cuda.current_stream()
try:
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        y = torch.ones(16, device="cuda") * 2
except vramkit.torch.CudaGraphsUnsupportedError as e:
    assert "max-autotune-no-cudagraphs" in str(e), str(e)
else:
    raise SystemExit("a CUDA graph was captured under vramkit")
assert torch.cuda.current_stream() == stream, "the capture's stream stayed current"


def chain(e):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


# torch.compile's CUDA graphs: refused with vramkit's reason, or (where PyTorch falls back to
# running without a graph) right answers with no graph captured.
f = torch.compile(lambda x: x * 2 + 1, mode="reduce-overhead")
try:
    for _ in range(4):
        out = f(torch.ones(8, device="cuda"))
        assert out.tolist() == [3.0] * 8, out
except Exception as e:  # dynamo may wrap it
    assert any("max-autotune-no-cudagraphs" in str(c) for c in chain(e)), repr(e)
print("OK")
