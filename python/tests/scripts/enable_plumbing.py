"""enable() installs the allocator and the patches (no CUDA tensor is made).

Runs with a CUDA build of PyTorch, with or without a GPU: PyTorch's allocator can be
swapped before CUDA starts either way. Checks the argument checks, that a second
enable() is refused, that the patched functions are in place and wrap PyTorch's,
and that empty_cache reaches vramkit.
"""

import vramkit
import vramkit.torch

try:
    vramkit.torch.enable(oom="crash")
except ValueError as e:
    assert "'raise', 'null'" in str(e), str(e)
else:
    raise SystemExit("oom='crash' was accepted")
assert not vramkit.torch.enabled()

import torch  # noqa: E402

original_record_stream = torch.Tensor.record_stream
original_empty_cache = torch.cuda.empty_cache
vramkit.torch.enable(budget="2GiB")
assert vramkit.torch.enabled()
assert not torch.cuda.is_initialized()
assert torch.Tensor.record_stream.__wrapped__ is original_record_stream
assert torch.cuda.empty_cache.__wrapped__ is original_empty_cache
assert torch.cuda.memory.empty_cache is torch.cuda.empty_cache
assert torch.cuda.set_per_process_memory_fraction is torch.cuda.memory.set_per_process_memory_fraction
assert torch.cuda.memory._get_current_allocator is not None

torch.cuda.empty_cache()  # vramkit's trim of every device in use: none yet

try:
    vramkit.torch.enable()
except RuntimeError as e:
    assert "already called" in str(e), str(e)
else:
    raise SystemExit("a second enable() was accepted")
print("OK")
