#!/bin/sh
# One device call: the GPU tests on CUDA and NVIDIA Vulkan, then the benches, the
# Python references and an Nsight Compute look at the blur passes. Logs under $OUT; the test
# summary is printed again at the end. Per target: .device/env_test_NAME, .device/env_bench_NAME
# (environment), .device/args_bench_NAME (arguments); .device/refs names the references to run;
# .device/quick skips the references and Nsight Compute.
cd "$(dirname "$0")/.." && tar xzf .device/dev.tgz -C .device
export VRAMKIT_REQUIRE_GPU=1 VRAMKIT_REQUIRE_CUDA=1 WGPU_BACKEND=vulkan
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The test binaries read fixtures under the checkout they were built in (bundle.sh records it).
ROOT=$(cat .device/build_root 2>/dev/null)
[ -z "$ROOT" ] || [ -e "$ROOT" ] || { mkdir -p "$(dirname "$ROOT")" && ln -s "$PWD" "$ROOT"; }
nvidia-smi -L
# NCCL (feature nccl): pip's nvidia-nccl ships libnccl.so.2, cudarc looks for libnccl.so.
NCCL_LIB=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)
if [ -n "$NCCL_LIB" ] && [ -e "$NCCL_LIB/libnccl.so.2" ]; then
  mkdir -p /tmp/nccl-link && ln -sf "$NCCL_LIB/libnccl.so.2" /tmp/nccl-link/libnccl.so
  export LD_LIBRARY_PATH=/tmp/nccl-link:$NCCL_LIB:$LD_LIBRARY_PATH
fi
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# ONLY=tests or ONLY=benches splits the work over two calls (each call is at most 10 minutes);
# TEST_THREADS=N runs each test binary's tests N at a time (default 1).
[ "$ONLY" = benches ] || for t in $(ls .device/bin); do
  case $t in bench_*) continue;; esac
  start=$(date +%s)
  env $(cat .device/env_test_$t 2>/dev/null) timeout 150 .device/run $t --test-threads=${TEST_THREADS:-1} > $OUT/test_$t.log 2>&1
  echo "== $t rc=$? $(( $(date +%s) - start ))s $(grep -h 'test result' $OUT/test_$t.log | tr '\n' ' ')" | tee -a $OUT/summary.txt
  grep -h "FAILED\|panicked" $OUT/test_$t.log | head -5 | tee -a $OUT/summary.txt
done
[ "$ONLY" = benches ] || for m in $(ls .device/mutants 2>/dev/null); do
  timeout 150 env LD_LIBRARY_PATH=.device/lib:$LD_LIBRARY_PATH XDG_RUNTIME_DIR=/tmp .device/mutants/$m --test-threads=1 held:: every_pair > $OUT/mutant_$m.log 2>&1
  rc=$?; [ $rc = 0 ] && v="SURVIVED (its tests passed)" || v="caught (rc=$rc)"
  echo "== mutant $m: $v $(grep -h 'panicked at' $OUT/mutant_$m.log | head -2 | tr '\n' ' ')" | tee -a $OUT/summary.txt
done
[ "$ONLY" = tests ] || for b in $(ls .device/bin | grep '^bench_'); do
  start=$(date +%s)
  args=$(cat .device/args_$b 2>/dev/null)
  env $(cat .device/env_$b 2>/dev/null) timeout 240 .device/run $b --bench $args > $OUT/$b.txt 2>&1
  echo "== $b rc=$? $(( $(date +%s) - start ))s"
  grep -v "XDG\|^\s*$\|Warming\|Collecting\|Analyzing\|change:\|No change\|Performance has\|within noise\|Found .* outliers\|high mild\|high severe\|low mild\|low severe\|^Benchmarking\|Warning: Unable" $OUT/$b.txt | head -120
done
[ -e .device/quick ] || [ "$ONLY" = tests ] || for p in $(cat .device/refs 2>/dev/null || echo image_cupy matmul_torch); do
  [ -f .device/ref/$p.py ] && { echo "== $p"; timeout 120 python3 .device/ref/$p.py 2>&1 | tail -20; }
done
[ -d .device/photos ] && [ "$ONLY" != tests ] && [ ! -e .device/no_tool_folder ] && sh .device/tool_folder.sh
[ -d .device/photos ] && [ "$ONLY" != tests ] && [ -e .device/tool_devices ] && sh .device/tool_devices.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ ! -e .device/quick ] && [ "$ONLY" != tests ] && [ -n "$NCU" ] && [ -e .device/bin/bench_image_kernels ]; then
  echo "== ncu ($NCU): the CUDA blur passes, sigma 2, 4K"
  timeout 150 "$NCU" --target-processes all --kernel-name regex:'horizontal|vertical' --launch-count 2 \
    --section SpeedOfLight --section Occupancy .device/bin/bench_image_kernels --bench 2>&1 \
    | grep -E "horizontal|vertical|Duration|Throughput|Achieved Occupancy|Registers|Block Limit|==PROF==|==ERROR==" | head -40
else
  echo "no ncu"
fi
echo "== summary"; cat $OUT/summary.txt
