#!/usr/bin/env bash
# On the device machine, after torch_bundle.sh here (carry [".device"]): where the time of
# malloc + free goes on CUDA. The live workloads' traces replayed through the C ABI on the GPU
# (no kernels: the library's own time), with the default slack and with one large enough that
# no page moves; then, where the tools are installed, the driver calls of one replay under
# Nsight Systems and the library's hot functions under perf. Results in $OUT/cost.md.
#   TRACES ["live_moe live_bert_varlen live_lora_llama live_llama_serving live_convnext"]
#   SLACKS ["default 0.15"]   UNMAPS ["on off"] (VRAMKIT_BACKGROUND_UNMAP)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
BIN=$PWD/.device/torch/replay_capi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/cost.md"
replay() { # slack trace [wrapper...]
  local slack=$1 t=$2; shift 2
  if [ "$slack" = default ]; then
    env VRAMKIT_BACKEND=cuda VRAMKIT_TRACES="$PWD/benches/traces" "$@" "$BIN" --bench "$t"
  else
    env VRAMKIT_BACKEND=cuda VRAMKIT_SLACK="$slack" VRAMKIT_TRACES="$PWD/benches/traces" "$@" \
      "$BIN" --bench "$t"
  fi
}
for s in ${SLACKS:-default 0.15}; do
  for u in ${UNMAPS:-on off}; do
    echo "== slack $s, background unmap $u" | tee -a "$OUT/cost.md"
    for t in ${TRACES:-live_moe live_bert_varlen live_lora_llama live_llama_serving live_convnext}; do
      VRAMKIT_BACKGROUND_UNMAP=$u replay "$s" "$t" 2>&1 | tail -1 | tee -a "$OUT/cost.md"
    done
  done
done
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
  echo "== nsys: the driver calls of one replay (live_moe, default slack)" | tee -a "$OUT/cost.md"
  (cd "$OUT" && timeout 240 "$NSYS" profile -q -t cuda,osrt -o moe -f true \
    env VRAMKIT_BACKEND=cuda VRAMKIT_TRACES="$PWD/benches/traces" "$BIN" --bench live_moe \
    >/dev/null 2>&1 && "$NSYS" stats -q -r cuda_api_sum,osrt_sum -f csv moe.nsys-rep 2>/dev/null \
    | head -60) | tee -a "$OUT/cost.md"
  rm -f "$OUT"/moe.nsys-rep "$OUT"/moe.sqlite
else
  echo "== nsys: not installed" | tee -a "$OUT/cost.md"
fi
if command -v perf >/dev/null; then
  echo "== perf: hot functions of one replay (live_moe, slack 0.15)" | tee -a "$OUT/cost.md"
  (cd "$OUT" && replay 0.15 live_moe perf record -q -F 5000 -g -o perf.data >/dev/null 2>&1 \
    && perf report -q -i perf.data --no-children --percent-limit 0.7 --stdio 2>/dev/null \
    | grep -v '^$' | head -80) | tee -a "$OUT/cost.md"
  rm -f "$OUT/perf.data"
else
  echo "== perf: not installed" | tee -a "$OUT/cost.md"
fi
