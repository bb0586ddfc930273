#!/usr/bin/env bash
# Bundles release binaries with the Vulkan loader for the GPU machine, which has NVIDIA's
# Vulkan driver but no loader and no Rust toolchain: .device/bin/<binaries>,
# .device/lib/libvulkan.so.1 and .device/run, which runs one with the bundled loader
# (`.device/run NAME ARGS...`) through the driver's EGL entry (headless).
#   tools/device/vulkan_bundle.sh PATH/TO/BINARY [MORE...]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARY [BINARY...]" >&2; exit 2; }
loader=/usr/lib/x86_64-linux-gnu/libvulkan.so.1
[ -e "$loader" ] || { echo "installing libvulkan1 for the Vulkan loader" >&2; apt-get install -y libvulkan1 >/dev/null; }
mkdir -p .device/bin .device/lib
cp -L "$loader" .device/lib/libvulkan.so.1
for b in "$@"; do cp -L "$b" .device/bin/; done
cat > .device/run <<'RUN'
#!/bin/sh
# .device/run NAME [ARGS...]: a bundled binary with the bundled Vulkan loader.
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
# NVIDIA's own ICD file names its GLX library, which finds no display; the EGL entry of the
# same driver works headless.
if [ -z "${VK_ICD_FILENAMES:-}" ] && ldconfig -p 2>/dev/null | grep -q libEGL_nvidia.so.0; then
  printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.4.312"}}' > /tmp/vramkit_nvidia_icd.json
  export VK_ICD_FILENAMES=/tmp/vramkit_nvidia_icd.json
fi
name="$1"; shift
exec "$here/bin/$name" "$@"
RUN
chmod +x .device/run
