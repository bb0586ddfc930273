"""The C++ shim that turns vramkit's refusals into c10::OutOfMemoryError.

It is built with torch.utils.cpp_extension (no CUDA needed) and driven directly on
the host backend, each case in its own process (see scripts/shim_host.py).
"""

import shutil
import signal

import pytest

from subproc import needs_torch, run_script


@pytest.fixture(autouse=True)
def _needs_torch_and_compiler():
    needs_torch()
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler to build the PyTorch shim")


def test_shim_allocates_and_frees_through_vramkit():
    proc = run_script("shim_host.py", "ok", VRAMKIT_BACKEND="host", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("OK")


def test_refusal_throws_out_of_memory_error_with_vramkits_message():
    proc = run_script("shim_host.py", "refuse", VRAMKIT_BACKEND="host", timeout=900)
    assert "CALLING" in proc.stdout, proc.stdout + proc.stderr
    assert "RETURNED" not in proc.stdout, "the shim returned from a refused allocation"
    assert proc.returncode == -signal.SIGABRT, proc.stderr
    assert "c10::OutOfMemoryError" in proc.stderr, proc.stderr
    assert "67108864" in proc.stderr or "64 MiB" in proc.stderr or "64.00 MiB" in proc.stderr, proc.stderr


def test_unbound_shim_says_how_to_install_it():
    proc = run_script("shim_host.py", "unbound", VRAMKIT_BACKEND="host", timeout=900)
    assert "RETURNED" not in proc.stdout
    assert proc.returncode == -signal.SIGABRT, proc.stderr
    assert "c10::Error" in proc.stderr
    assert "vramkit.torch.enable()" in proc.stderr
