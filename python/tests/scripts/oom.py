"""A request over vramkit's budget raises torch.OutOfMemoryError, and work goes on.

Under a 1 GiB budget, a 2 GiB tensor is refused; prints the message as JSON and
checks that later allocations within the budget still work.
"""

import json

import vramkit
import vramkit.torch

vramkit.torch.enable(budget="1GiB")

import torch  # noqa: E402

keep = torch.ones(256 << 20, dtype=torch.uint8, device="cuda")
try:
    torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError as e:
    message = str(e)
else:
    raise SystemExit("a 2 GiB tensor was allocated under a 1 GiB budget")

after = torch.ones(1 << 20, device="cuda")
assert after.sum().item() == float(1 << 20)
# min and max read the bytes in place (a sum would first cast them to int64: 2 GiB).
assert keep.min().item() == 1 and keep.max().item() == 1
s = vramkit.stats()
print(json.dumps({"message": message, "refusals": s["refusals"], "budget": s["budget"]}))
