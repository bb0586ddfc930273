# vramkit: the two commands of the README, and their helpers.
#   make demo   runs the 4K image tool on its built-in test chart under a 256 MiB budget
#   make test   runs every test (GPU tests on lavapipe if there is no GPU)
# Both install the Vulkan loader and lavapipe when no Vulkan driver is present (Debian/Ubuntu).
# Everything builds with the CUDA backend (FEATURES=cuda; it loads the NVIDIA driver at run time,
# so it builds anywhere); its tests skip where there is no NVIDIA driver. FEATURES= builds
# without it.

SHELL := /bin/bash
export XDG_RUNTIME_DIR ?= /tmp
CARGO ?= cargo
FEATURES ?= cuda
FLAGS := --release $(if $(FEATURES),--features $(FEATURES))
# The crates with the `cuda` feature; the C ABI (capi/) is tested on its own.
CRATES := -p vramkit -p vramkit-kernels -p vramkit-image

.PHONY: demo test test-debug test-python bench deps

# The Vulkan loader (libvulkan.so.1, as ldconfig lists it) and at least one driver manifest
# (ICD: a *.json in any of ICD_DIRS); apt runs only when one of them is missing. Globs that
# match nothing are skipped, so an empty /etc/vulkan/icd.d does not hide the Mesa one.
ICD_DIRS ?= /usr/share/vulkan/icd.d /etc/vulkan/icd.d
deps:
	@icd=; \
	for d in $(ICD_DIRS); do \
	  for f in "$$d"/*.json; do [ -f "$$f" ] && { icd=$$f; break 2; }; done; \
	done; \
	loader=; \
	LDCONFIG=$$(command -v ldconfig || echo /sbin/ldconfig); \
	$$LDCONFIG -p 2>/dev/null | grep -q 'libvulkan\.so\.1 ' && loader=yes; \
	if [ -z "$$icd" ] || [ -z "$$loader" ]; then \
	  [ -n "$$loader" ] || echo "no Vulkan loader (libvulkan.so.1) in ldconfig's cache"; \
	  [ -n "$$icd" ] || echo "no Vulkan driver manifest (*.json) in $(ICD_DIRS)"; \
	  echo "installing the Vulkan loader and lavapipe (mesa-vulkan-drivers libvulkan1)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null; \
	fi

demo: deps
	$(CARGO) run $(FLAGS) -p vramkit-image --bin image_4k -- --chart --budget 256MiB --out out
	@echo "the processed 4K test chart is in out/test_chart.png"

test: deps
	# vramkit, the kernels (kernels/), and the image pipeline with the image_4k tool (image/),
	# whose tests run the tool's binary: in one cargo call, so vramkit is compiled once.
	$(CARGO) test $(FLAGS) $(CRATES) --all-targets
	$(CARGO) test $(FLAGS) $(CRATES) --doc
	# The C ABI (capi/): its tests run on the host backend, and compile a C program against
	# the shared library, which `cargo test` does not build by itself.
	$(CARGO) build --release -p vramkit-capi
	$(CARGO) test --release -p vramkit-capi --all-targets
	$(MAKE) test-python

# The Python package (python/), installed into a venv of its own (pip builds the C library
# with cargo, into this target dir); its tests use the host backend, and those that need
# PyTorch, CuPy or a GPU skip where there is none.
PYTHON_VENV ?= $(CURDIR)/target/python-venv
test-python:
	@[ -x "$(PYTHON_VENV)/bin/pip" ] || python3 -m venv "$(PYTHON_VENV)" 2>/dev/null || { \
	  rm -rf "$(PYTHON_VENV)"; echo "installing python3-venv"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv python3-pip >/dev/null && \
	  python3 -m venv "$(PYTHON_VENV)"; }
	"$(PYTHON_VENV)/bin/pip" install -q pytest
	CARGO_TARGET_DIR=$(CURDIR)/target "$(PYTHON_VENV)/bin/pip" install -q ./python
	"$(PYTHON_VENV)/bin/python" -m pytest -q python/tests

# The same tests in a debug build (overflow checks and debug assertions on): what users'
# `cargo test` runs, for the memory manager, the image pipeline with its decoders, and the C
# ABI. The kernels' tests (GPU work checked against CPU references) run in the release build
# only: in a debug build they take minutes on lavapipe and check no more host code.
DEBUG_CRATES := -p vramkit -p vramkit-image
test-debug: deps
	$(CARGO) test $(if $(FEATURES),--features $(FEATURES)) $(DEBUG_CRATES) --lib --tests
	$(CARGO) build -p vramkit-capi
	$(CARGO) test -p vramkit-capi

bench: deps
	$(CARGO) bench $(if $(FEATURES),--features $(FEATURES)) $(CRATES)
