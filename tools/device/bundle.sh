#!/usr/bin/env bash
# Usage: .device/bundle.sh "TEST..." "BENCH..." (either may be empty): builds (release,
# --features nccl) and copies the named test and bench binaries (paths from cargo's JSON
# messages, so a test and a bench of one name never mix up), the image_4k binary and the
# Vulkan loader into .device, stripped, as dev.tgz (the carry limit is 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.." && mkdir -p .device && cp tools/device/run tools/device/go.sh tools/device/frames.sh tools/device/tool_folder.sh tools/device/tool_devices.sh tools/device/tool_vs_opencv.sh .device/
rm -rf .device/bin .device/examples .device/lib
exe() { python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    # Test and bench harnesses only: a binary the tests run (image_4k) comes as an artifact too.
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])'; }
targets() { for n in $2; do printf -- "--$1 %s " "$n"; done; }
cargo build --release --features nccl -p vramkit-image --bin image_4k -q
tools/device/vulkan_bundle.sh target/release/image_4k >/dev/null
mkdir -p .device/examples && mv .device/bin/image_4k .device/examples/
# Test and bench names are looked for in the three crates (vramkit, vramkit-kernels, vramkit-image).
mkdir -p .device/bin
[ -z "$1" ] || cargo test --release --features nccl --no-run -p vramkit -p vramkit-kernels -p vramkit-image $(targets test "$1") --message-format=json 2>/dev/null | exe |
  while read -r name path; do cp -L "$path" .device/bin/$name; done
[ -z "$2" ] || cargo bench --features nccl --no-run -p vramkit -p vramkit-kernels -p vramkit-image $(targets bench "$2") --message-format=json 2>/dev/null | exe |
  while read -r name path; do cp -L "$path" .device/bin/bench_$name; done
strip $(ls .device/bin/* 2>/dev/null) .device/examples/image_4k
mkdir -p .device/ref && cp benches/reference/*.py .device/ref/
# Photographs for the tool's folder run (tool_folder.sh): scikit-image's, from the reference venv.
SK=$(ls -d ${VRAMKIT_REFERENCE_VENV:-/tmp/vramkit-reference-venv}/lib/python3*/site-packages/skimage/data 2>/dev/null | head -1 || true)
rm -rf .device/photos; if [ -n "$SK" ]; then mkdir -p .device/photos && for p in astronaut coffee chelsea rocket motorcycle_left hubble_deep_field; do
  cp "$SK/$p.png" .device/photos/ 2>/dev/null || true; done; fi
# Mutants (test binaries built from deliberately broken code, MUTANTS=folder): go.sh runs them
# and reports whether their tests fail, as they must.
rm -rf .device/mutants; if [ -n "${MUTANTS:-}" ]; then mkdir -p .device/mutants && cp "$MUTANTS"/* .device/mutants/; fi
touch .device/args_none
# Test binaries find their fixtures through the checkout path they were built in
# (CARGO_MANIFEST_DIR): go.sh links it to the device machine's checkout.
pwd > .device/build_root
(cd .device && tar czf dev.tgz bin examples lib run ref args_* $(ls -d photos mutants 2>/dev/null) && rm -rf bin examples lib ref photos mutants)
tar tzf .device/dev.tgz | grep bin/ | tr '\n' ' '; echo; ls -la .device/dev.tgz
