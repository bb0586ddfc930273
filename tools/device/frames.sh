#!/bin/sh
# Makes $FRAMES (default 16) 3840×2160 JPEGs in $F from the photographs in .device/photos
# (scikit-image's, upscaled with OpenCV, quality 92). Sourced by tool_folder.sh and
# tool_devices.sh.
F=${F:-/tmp/vramkit_frames}
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
