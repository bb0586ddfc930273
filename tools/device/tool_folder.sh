#!/bin/sh
# The 4K tool over a folder of photographs (does frame-level pipelining matter?).
# Makes 16 3840×2160 JPEGs from photographs (frames.sh), then runs the default chain over the folder on each backend, with
# the default budget (several frames at once) and with one that holds a single frame's working
# set; prints the whole run's seconds per frame and the pipeline's own (upload, kernels,
# download) from the JSON report.
. .device/frames.sh
for backend in ${BACKENDS:-cuda wgpu}; do
  for budget in "" "--budget 600MiB"; do
    for out in jpg png; do
      rm -rf /tmp/vramkit_out /tmp/vramkit_report.json
      timeout 240 .device/run ../examples/image_4k $F --out /tmp/vramkit_out --out-format $out --backend $backend $budget \
        --json /tmp/vramkit_report.json 2> /tmp/vramkit_tool.err >/dev/null
      rc=$?
      python3 - "$backend" "$budget" "$out" "$rc" <<'PY'
import json, sys
try:
    r = json.load(open('/tmp/vramkit_report.json'))
except OSError:
    sys.exit(print(f'tool {sys.argv[1]} rc={sys.argv[4]}: no report'))
files = [f for f in r['files'] if f.get('written')]
t = r['totals']
pipe = sum(f['seconds'] for f in files) / max(len(files), 1)
print(f"tool {sys.argv[1]:5} budget={sys.argv[2] or 'device':18} out={sys.argv[3]} rc={sys.argv[4]} "
      f"written={t['written']}/{t['files']} wall/frame={1e3*t['seconds']/max(len(files),1):.1f} ms "
      f"pipeline/frame={1e3*pipe:.2f} ms peak_reserved={t['peak_reserved_bytes']/2**20:.0f} MiB")
PY
      grep -h "frames at once" /tmp/vramkit_tool.err
    done
  done
done
