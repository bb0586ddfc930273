#!/bin/sh
# The 4K tool spreading a folder of frames over devices: 48 4K JPEGs from
# photographs (frames.sh), the default chain, on one device (`--devices 0`), on two contexts
# of device 0 (`--devices 0,0`) and on every device (`--devices all`), CUDA and wgpu; frames/s
# of the whole run and the frames each device made, from the JSON report. Outputs of the
# several-device runs are compared byte for byte with the one-device run's.
FRAMES=${FRAMES:-48} . .device/frames.sh
for backend in ${BACKENDS:-cuda wgpu}; do
  for devices in 0 0,0 all; do
    out=/tmp/vramkit_out_$(echo $devices | tr , _)
    rm -rf $out /tmp/vramkit_report.json
    start=$(date +%s.%N)
    timeout 240 .device/run ../examples/image_4k $F --out $out --out-format jpg --backend $backend \
      --devices $devices --json /tmp/vramkit_report.json 2> /tmp/vramkit_tool.err >/dev/null
    rc=$?
    python3 - "$backend" "$devices" "$rc" "$start" <<'PY'
import json, sys, time
wall = time.time() - float(sys.argv[4])
try:
    r = json.load(open('/tmp/vramkit_report.json'))
except OSError:
    sys.exit(print(f'tool {sys.argv[1]} --devices {sys.argv[2]} rc={sys.argv[3]}: no report'))
t = r['totals']
per = ' '.join(f"{d['index']}:{d['frames']}" for d in r.get('devices', []))
print(f"tool {sys.argv[1]:5} --devices {sys.argv[2]:4} rc={sys.argv[3]} written={t['written']}/{t['files']} "
      f"run {t['seconds']:.2f} s = {t['written'] / t['seconds']:.1f} frames/s (process {wall:.2f} s) frames per device {per}")
PY
    [ $rc = 0 ] || tail -3 /tmp/vramkit_tool.err
    if [ $devices != 0 ]; then
      if diff -rq /tmp/vramkit_out_0 $out >/dev/null; then echo "  outputs equal to --devices 0"; else echo "  OUTPUTS DIFFER from --devices 0"; fi
    fi
  done
done
