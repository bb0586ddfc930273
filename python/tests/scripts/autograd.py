"""Backward passes that allocate from autograd's threads; prints digests as JSON.

Usage: autograd.py default | vramkit
A small MLP runs forward and backward with tensor hooks that allocate (they run on
autograd's device thread), then four Python threads do the same at once. Prints
the SHA-256 of the gradients of the single pass and of each thread's pass, whether
the hooks ran off the main thread, and (under vramkit) how many allocations the
backward pass made through vramkit.
"""

import copy
import hashlib
import json
import os
import sys
import threading

mode = sys.argv[1]
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
if mode == "vramkit":
    import vramkit
    import vramkit.torch

    vramkit.torch.enable()

import torch  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False

device = "cuda"
base = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.Tanh(), torch.nn.Linear(512, 8)
).to(device)
x = torch.randn(64, 256, device=device)
hook_threads = set()


def scale_hook(grad):
    hook_threads.add(threading.get_ident())
    return grad * torch.full_like(grad, 0.5) + torch.zeros_like(grad)


def grads_digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.grad.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def one_pass(model, mallocs=None):
    """Forward and backward; appends the vramkit_malloc calls of the backward pass to
    ``mallocs`` when given."""
    model.zero_grad(set_to_none=True)
    hidden = model[1](model[0](x))
    hidden.register_hook(scale_hook)
    out = model[4](model[3](model[2](hidden)))
    out.register_hook(scale_hook)
    loss = out.pow(2).sum()
    torch.cuda.synchronize()
    before = vramkit.stats()["malloc_calls"] if mallocs is not None else 0
    loss.backward()
    torch.cuda.synchronize()
    if mallocs is not None:
        mallocs.append(vramkit.stats()["malloc_calls"] - before)
    return grads_digest(model)


result = {}
mallocs = [] if mode == "vramkit" else None
result["digest"] = one_pass(base, mallocs)
if mode == "vramkit":
    result["backward_mallocs"] = mallocs[0]
result["hooks_off_main_thread"] = threading.get_ident() not in hook_threads

copies = [copy.deepcopy(base) for _ in range(4)]
digests = [None] * 4
errors = []


def worker(i):
    try:
        digests[i] = one_pass(copies[i])
    except Exception as e:  # reported in the JSON; the test fails on it
        errors.append(repr(e))


threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
result["thread_digests"] = digests
result["errors"] = errors
print(json.dumps(result))
