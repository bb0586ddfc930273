#!/usr/bin/env bash
# On the device machine, after torch_bundle.sh here (carry [".device"]): the live workloads
# under PyTorch's default allocator and under vramkit with several page sizes
# (VRAMKIT_PAGE_SIZE; SIZE/fixed also sets VRAMKIT_PAGE_GROWTH=off: that size everywhere;
# every entry runs with the unmapping thread (VRAMKIT_BACKGROUND_UNMAP=on) unless a /inline
# suffix turns it off, the library's default: pages unmapped inside the allocation),
# interleaved per workload so that each comparison shares the machine's state of the moment.
# Results: $OUT/pages_<workload>_<mode>.jsonl, then one table.
#   WORKLOADS ["moe lora_llama llama_serving bert_varlen"]  PAGES ["2MiB/fixed 2MiB 8MiB/fixed"]
#   STEPS [20]  RUN_TIMEOUT [90]
set -u
export VRAMKIT_LIBRARY=$PWD/.device/torch/libvramkit_capi.so PYTHONPATH=$PWD/python
export VRAMKIT_REQUIRE_CUDA=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
STEPS=${STEPS:-20}
for w in ${WORKLOADS:-moe lora_llama llama_serving bert_varlen}; do
  WORKLOADS=$w MODES=default STEPS=$STEPS MAXBATCH_WORKLOADS= BUDGET_S=200 \
    RUN_TIMEOUT=${RUN_TIMEOUT:-90} bash benches/torch/run_all.sh "$OUT/pages_${w}_default.jsonl" \
    | grep -E "^-- "
  for p in ${PAGES:-2MiB/fixed 2MiB 8MiB/fixed}; do
    growth=on; case $p in */fixed*) growth=off ;; esac
    unmap=on; case $p in */inline) unmap=off ;; esac
    size=${p%%/*}
    VRAMKIT_PAGE_SIZE=$size VRAMKIT_PAGE_GROWTH=$growth VRAMKIT_BACKGROUND_UNMAP=$unmap \
      WORKLOADS=$w MODES=vramkit \
      STEPS=$STEPS MAXBATCH_WORKLOADS= BUDGET_S=200 RUN_TIMEOUT=${RUN_TIMEOUT:-90} \
      bash benches/torch/run_all.sh "$OUT/pages_${w}_${size}_${growth}_$unmap.jsonl" | grep -E "^-- "
  done
  # The table so far, should a later workload not finish in the call's time.
  python3 benches/torch/pages_table.py "$OUT"/pages_*.jsonl >"$OUT/pages.md"
done
cat "$OUT/pages.md"
