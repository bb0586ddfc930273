"""Trains a small transformer for 20 deterministic steps; prints the losses as JSON.

Usage: train.py default | vramkit
Under "vramkit" the allocator is vramkit (installed before CUDA starts); the losses,
written as float.hex, must be bit-identical to those of PyTorch's own allocator.
"""

import json
import os
import sys

mode = sys.argv[1]
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
if mode == "vramkit":
    import vramkit.torch

    vramkit.torch.enable()

import torch  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

device = "cuda"
layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, dropout=0.1, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).to(device)
head = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 10)).to(device)
params = list(encoder.parameters()) + list(head.parameters())
optimizer = torch.optim.AdamW(params, lr=1e-3)

x = torch.randn(32, 24, 64, device=device)
y = torch.randint(0, 10, (32,), device=device)
losses = []
for step in range(20):
    optimizer.zero_grad(set_to_none=True)
    logits = head(encoder(x).mean(dim=1))
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

result = {"losses": [v.hex() for v in losses]}
if mode == "vramkit":
    result["allocations"] = vramkit.torch.memory_stats()["allocation.all.allocated"]
print(json.dumps(result))
