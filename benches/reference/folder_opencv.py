"""The 4K tool's default chain done the way a user would without it: OpenCV, one process per
core, over a folder of JPEGs. Per file: decode, sRGB -> linear (f32), Gaussian blur sigma 3,
area resize to 1920x1080, linear -> sRGB, encode as JPEG at the tool's default quality (90).
Prints one JSON object: files, processes, wall seconds and frames per second.

    python3 folder_opencv.py FOLDER OUT [PROCESSES]
"""
import glob
import json
import os
import sys
import time
from multiprocessing import Pool

import cv2
import numpy as np

cv2.setNumThreads(1)  # one process per core, each single-threaded

TO_LINEAR = np.array(
    [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
     for c in (i / 255.0 for i in range(256))],
    dtype=np.float32,
)


def to_srgb(lin):
    lin = np.clip(lin, 0.0, 1.0)
    out = np.where(lin <= 0.0031308, lin * 12.92, 1.055 * np.power(lin, 1 / 2.4) - 0.055)
    return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)


def one(args):
    src, dst = args
    img = cv2.imread(src, cv2.IMREAD_COLOR)
    lin = TO_LINEAR[img]
    lin = cv2.GaussianBlur(lin, (0, 0), sigmaX=3, sigmaY=3, borderType=cv2.BORDER_REPLICATE)
    lin = cv2.resize(lin, (1920, 1080), interpolation=cv2.INTER_AREA)
    cv2.imwrite(dst, to_srgb(lin), [cv2.IMWRITE_JPEG_QUALITY, 90])


def main():
    folder, out = sys.argv[1], sys.argv[2]
    procs = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count()
    os.makedirs(out, exist_ok=True)
    files = sorted(glob.glob(os.path.join(folder, "*.jpg")))
    jobs = [(f, os.path.join(out, os.path.basename(f))) for f in files]
    start = time.perf_counter()
    with Pool(procs) as pool:
        pool.map(one, jobs, chunksize=1)
    wall = time.perf_counter() - start
    print(json.dumps({"files": len(files), "processes": procs, "seconds": round(wall, 3),
                      "frames_per_s": round(len(files) / wall, 2)}), flush=True)


if __name__ == "__main__":
    main()
