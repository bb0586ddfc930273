#!/usr/bin/env bash
# On the device machine (one GPU), from the repository root, after torch_bundle.sh here:
# the CUDA stream tests, the cudarc example, the Python package's GPU tests, then the live
# PyTorch benchmark (benches/torch/run_all.sh). Everything lands in $OUT.
#   ONLY=tests | bench | replay   runs one part; BUDGET_S (benchmark seconds) as run_all.sh.
#   replay: the stored traces through the C ABI on the GPU, one process per trace, with
#   follow_live on and off (REPLAY_TRACES names some).
set -u
export VRAMKIT_LIBRARY=$PWD/.device/torch/libvramkit_capi.so PYTHONPATH=$PWD/python
export VRAMKIT_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${ONLY:-tests}" = tests ]; then
  for t in .device/torch/test_*; do
    echo "== $t"; "$t" --test-threads=1 2>&1 | tail -20
  done
  echo "== cuda_interop"; .device/torch/cuda_interop 2>&1 | tail -5
  echo "== python tests"; python3 -m pytest -q -rs python/tests 2>&1 | tail -30
fi
if [ "${ONLY:-}" = replay ]; then
  for t in ${REPLAY_TRACES:-resnet_train vit_infer gpt_train unet_train gpt_generate}; do
    for live in on off; do
      echo "== replay $t follow_live=$live"
      VRAMKIT_BACKEND=cuda VRAMKIT_FOLLOW_LIVE=$live VRAMKIT_TRACES=$PWD/benches/traces \
        .device/torch/replay_capi --bench "$t" 2>&1 | tail -1
    done
  done
  exit 0
fi
if [ "${ONLY:-bench}" = bench ]; then
  echo "== live benchmark"; bash benches/torch/run_all.sh "$OUT/torch.jsonl"
fi
