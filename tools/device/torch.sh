#!/usr/bin/env bash
# On the device machine (one GPU), from the repository root, after torch_bundle.sh here:
# the CUDA stream tests, the cudarc example, the Python package's GPU tests, then the live
# PyTorch benchmark (benches/torch/run_all.sh). Everything lands in $OUT.
#   ONLY=tests | bench   runs one part; BUDGET_S (benchmark seconds) as run_all.sh.
set -u
export VRAMKIT_LIBRARY=$PWD/.device/torch/libvramkit_capi.so PYTHONPATH=$PWD/python
export VRAMKIT_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${ONLY:-tests}" != bench ]; then
  for t in .device/torch/test_*; do
    echo "== $t"; "$t" --test-threads=1 2>&1 | tail -20
  done
  echo "== cuda_interop"; .device/torch/cuda_interop 2>&1 | tail -5
  echo "== python tests"; python3 -m pytest -q -rs python/tests 2>&1 | tail -30
fi
if [ "${ONLY:-bench}" != tests ]; then
  echo "== live benchmark"; bash benches/torch/run_all.sh "$OUT/torch.jsonl"
fi
