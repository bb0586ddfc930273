#!/bin/sh
# The 4K tool over a folder of photographs (issue 13: does frame-level pipelining matter?).
# Makes 16 3840×2160 JPEGs from the photographs in .device/photos (scikit-image's, upscaled
# with OpenCV, quality 92), then runs the default chain over the folder on each backend, with
# the default budget (several frames at once) and with one that holds a single frame's working
# set; prints the whole run's seconds per frame and the pipeline's own (upload, kernels,
# download) from the JSON report.
F=/tmp/vramkit_frames
FRAMES=${FRAMES:-16}
rm -rf $F && mkdir -p $F
python3 - "$F" "$FRAMES" <<'PY'
import cv2, glob, sys
srcs = sorted(glob.glob('.device/photos/*.png'))
for i in range(int(sys.argv[2])):
    img = cv2.imread(srcs[i % len(srcs)], cv2.IMREAD_COLOR)
    big = cv2.resize(img, (3840, 2160), interpolation=cv2.INTER_CUBIC)
    cv2.imwrite(f'{sys.argv[1]}/f{i:02d}.jpg', big, [cv2.IMWRITE_JPEG_QUALITY, 92])
print(len(srcs), 'photographs ->', sys.argv[2], 'frames')
PY
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
