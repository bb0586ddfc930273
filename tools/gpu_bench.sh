#!/usr/bin/env bash
# The GPU tests and benches on any Linux machine with an NVIDIA GPU, its driver and Rust:
# every test on CUDA and on the NVIDIA Vulkan driver (a missing GPU fails instead of skipping),
# then the criterion benches, then, where python3 has PyTorch, the live PyTorch benchmark
# through the C ABI. Logs and results go to OUT (default target/gpu-bench).
#
#   bash tools/gpu_bench.sh            # everything
#   ONLY=tests bash tools/gpu_bench.sh # or ONLY=benches, ONLY=torch
#
# NVRTC and cuBLAS are looked for on LD_LIBRARY_PATH; the CUDA toolkit's usual folder is added
# when it exists. (tools/device/ does the same work split in two: build on a machine with
# Rust, run on a GPU machine without it.)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/target/gpu-bench}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export VRAMKIT_REQUIRE_GPU=1 VRAMKIT_REQUIRE_CUDA=1 WGPU_BACKEND=vulkan XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
FEATURES=${FEATURES:-cuda}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
  echo "no NVIDIA GPU (nvidia-smi failed)"; exit 1; }
status=0
case "${ONLY:-}" in
  ""|tests|benches|torch) ;;
  *) echo "ONLY=$ONLY: use tests, benches or torch (or leave it unset for all)"; exit 2;;
esac

if [ "${ONLY:-tests}" = tests ]; then
  echo "== tests (CUDA and NVIDIA Vulkan), log: $OUT/tests.log"
  cargo test --release --features "$FEATURES" -p vramkit -p vramkit-kernels -p vramkit-image --all-targets -- --test-threads=4 \
    >"$OUT/tests.log" 2>&1 || status=1
  grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | sort | uniq -c
fi

if [ "${ONLY:-benches}" = benches ]; then
  echo "== benches, log: $OUT/benches.log"
  cargo bench --features "$FEATURES" -p vramkit -p vramkit-kernels -p vramkit-image >"$OUT/benches.log" 2>&1 || status=1
  grep -E "^[a-z_/0-9 ]+time:|thrpt:" "$OUT/benches.log" | head -80
fi

if [ "${ONLY:-torch}" = torch ]; then
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== live PyTorch benchmark through the C ABI"
    cargo build --release -p vramkit-capi -q || status=1
    VRAMKIT_LIBRARY=$PWD/target/release/libvramkit_capi.so PYTHONPATH=$PWD/python \
      bash benches/torch/run_all.sh "$OUT/torch.jsonl" || status=1
  else
    echo "== live PyTorch benchmark skipped: python3 has no PyTorch with CUDA"
  fi
fi
exit $status
