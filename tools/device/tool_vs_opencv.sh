#!/bin/sh
# The 4K tool against OpenCV with one process per core, over one folder of 4K JPEGs ($FRAMES,
# default 64, made by frames.sh; PROCS the OpenCV process counts, default "$(nproc) 1"),
# default chain, JPEG out at quality 90: wall seconds for the
# whole folder, process start included, each run on its own output folder. COLD=1 empties the
# driver's kernel caches (CUDA's ~/.nv/ComputeCache, the Vulkan driver's ~/.cache/nvidia) before
# each backend's first run, as on a machine that never ran the tool.
FRAMES=${FRAMES:-64}
. .device/frames.sh
for procs in ${PROCS:-$(nproc) 1}; do
  rm -rf /tmp/cv_out; echo "opencv processes=$procs $(python3 .device/ref/folder_opencv.py $F /tmp/cv_out $procs)"
done
for backend in ${BACKENDS:-cuda wgpu}; do
  [ "${COLD:-0}" = 1 ] && rm -rf ~/.nv/ComputeCache ~/.cache/nvidia
  for run in 1 2; do
    rm -rf /tmp/vk_out
    s=$(date +%s%N)
    timeout 300 .device/run ../examples/image_4k $F --out /tmp/vk_out --out-format jpg --backend $backend \
      > /dev/null 2> /tmp/vk_err; rc=$?
    e=$(date +%s%N)
    n=$(ls /tmp/vk_out 2>/dev/null | wc -l)
    echo "image_4k backend=$backend run=$run rc=$rc files=$n seconds=$(( (e - s) / 1000000 ))ms $(grep -h 'frames at once' /tmp/vk_err)"
  done
done
