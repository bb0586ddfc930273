"""Test setup: this pytest process uses vramkit's host backend.

The host backend serves vramkit_malloc from host memory with the same allocator, so
its pointers can be written and read through ctypes. The library reads its
environment once, at its first call, and keeps one backend per process: the variable
is set here, before any test loads it. Tests that need PyTorch under the CUDA
backend run in subprocesses (see ``gpu.py``).
"""

import os

os.environ["VRAMKIT_BACKEND"] = "host"
for _name in ("VRAMKIT_BUDGET", "VRAMKIT_RELEASE_THRESHOLD", "VRAMKIT_TRACE", "VRAMKIT_FOLLOW_LIVE", "VRAMKIT_SLACK"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402

import vramkit  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def host_backend():
    """Loads the library on the host backend once for the whole session."""
    vramkit.configure(backend="host")
    yield


@pytest.fixture
def no_budget():
    """Device 0 without a budget before and after the test."""
    vramkit.set_budget(0, None)
    yield
    vramkit.set_budget(0, None)
