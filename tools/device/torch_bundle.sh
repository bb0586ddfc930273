#!/usr/bin/env bash
# Builds what the PyTorch run on the device machine needs into .device/torch (the checkout
# travels with the Python package and benches/torch): the C library, the CUDA stream tests
# the cudarc example and the C ABI's trace replay. Then, on the device machine: bash tools/device/torch.sh (carry
# [".device"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .device/torch && mkdir -p .device/torch
cargo build --release -p vramkit-capi -q
cp -L target/release/libvramkit_capi.so .device/torch/
cargo build --release --features cuda --example cuda_interop -q
cp -L target/release/examples/cuda_interop .device/torch/
cargo test --release --features cuda --no-run --test cuda_streams --test pages --test leases \
  --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])' |
  while read -r name p; do cp -L "$p" ".device/torch/test_$name"; done
cargo bench -p vramkit-capi --bench replay_capi --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["executable"])' |
  while read -r p; do cp -L "$p" .device/torch/replay_capi; done
strip .device/torch/*
ls -la .device/torch
