#!/usr/bin/env bash
# On the device machine, after torch_bundle.sh here (carry [".device"]): data-parallel training
# (benches/torch/ddp.py) of two workloads under PyTorch's default allocator, expandable segments
# and vramkit, two ranks (on one GPU: gloo), then a job whose rank 1 has a vramkit budget it
# cannot train in (it must fail with vramkit's message, the other rank stopped), and rank 0's
# timeline. Results: $OUT/ddp.jsonl, $OUT/ddp.md, $OUT/ddp_timeline.json.
#   WORKLOADS ["lora_llama moe"]  MODES ["default expandable vramkit"]  STEPS [8]
#   WORLD [2]  OOM_BUDGET [1:2GiB]
set -u
export VRAMKIT_LIBRARY=$PWD/.device/torch/libvramkit_capi.so PYTHONPATH=$PWD/python
export VRAMKIT_REQUIRE_CUDA=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R="$OUT/ddp.jsonl"
WL=${WORKLOADS:-lora_llama moe}
for w in $WL; do
  for m in ${MODES:-default expandable vramkit}; do
    extra=()
    [ "$m" = vramkit ] && [ "$w" = "${WL%% *}" ] && extra=(--timeline "$OUT/ddp_timeline.json")
    echo "-- $w $m"
    timeout 300 python3 benches/torch/ddp.py "$w" --mode "$m" --world "${WORLD:-2}" \
      --steps "${STEPS:-8}" "${extra[@]}" >>"$R" 2>"$OUT/ddp_${w}_$m.err" || echo "   exit $?"
    python3 benches/torch/ddp_table.py "$R" >"$OUT/ddp.md"
  done
done
echo "-- out of memory on one rank"
timeout 300 python3 benches/torch/ddp.py moe --mode vramkit --world "${WORLD:-2}" --steps 2 \
  --rank-budget "${OOM_BUDGET:-1:2GiB}" >>"$R" 2>"$OUT/ddp_oom.err"; echo "   exit $?"
python3 benches/torch/ddp_table.py "$R" >"$OUT/ddp.md"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print("timeline events:", len(t.get("traceEvents", t) if isinstance(t, dict) else t))' \
  "$OUT/ddp_timeline.json" 2>&1 | tail -1
cat "$OUT/ddp.md"
