"""Running test scripts in fresh processes, and skipping what this machine cannot run.

PyTorch's allocator must be installed before CUDA starts, and the library keeps one
backend per process, so every test that puts vramkit under PyTorch or CuPy runs a
script of ``tests/scripts`` in its own process, on the CUDA backend, with the same
``vramkit`` package this process imported.
"""

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vramkit

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def script_env(**extra):
    """The environment of a script: CUDA backend, vramkit importable, no stray settings."""
    env = dict(os.environ)
    for name in ("VRAMKIT_BACKEND", "VRAMKIT_BUDGET", "VRAMKIT_RELEASE_THRESHOLD", "VRAMKIT_TRACE", "VRAMKIT_FOLLOW_LIVE", "VRAMKIT_SLACK"):
        env.pop(name, None)
    package_parent = str(Path(vramkit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_script(name, *args, timeout=600, **env):
    """Runs ``tests/scripts/<name>`` with ``args``; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *map(str, args)],
        capture_output=True,
        text=True,
        env=script_env(**env),
        timeout=timeout,
    )


def check_script(name, *args, **env):
    """Runs a script that must succeed; returns its stdout, else fails with its output."""
    proc = run_script(name, *args, **env)
    if proc.returncode != 0:
        pytest.fail(f"{name} {' '.join(map(str, args))} exited with {proc.returncode}\n"
                    f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc.stdout


@functools.lru_cache(maxsize=None)
def torch_status():
    """(has torch, has a CUDA device) without starting CUDA in this process."""
    if importlib.util.find_spec("torch") is None:
        return False, False
    proc = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True, text=True, env=script_env(), timeout=300,
    )
    return proc.returncode == 0, proc.stdout.strip() == "True"


def needs_torch():
    """Skips the test when PyTorch is not installed."""
    has_torch, _ = torch_status()
    if not has_torch:
        pytest.skip("PyTorch is not installed")


def needs_cuda_torch():
    """Skips the test unless PyTorch sees a CUDA device."""
    has_torch, has_cuda = torch_status()
    if not has_torch:
        pytest.skip("PyTorch is not installed")
    if not has_cuda:
        pytest.skip("torch.cuda.is_available() is False: no CUDA device here")


@functools.lru_cache(maxsize=None)
def cupy_has_device():
    """Whether CuPy is installed and sees a CUDA device (checked in a subprocess)."""
    if importlib.util.find_spec("cupy") is None:
        return None
    proc = subprocess.run(
        [sys.executable, "-c", "import cupy; print(cupy.cuda.runtime.getDeviceCount())"],
        capture_output=True, text=True, env=script_env(), timeout=300,
    )
    return proc.returncode == 0 and proc.stdout.strip() not in ("", "0")


def needs_cuda_cupy():
    """Skips the test unless CuPy is installed and sees a CUDA device."""
    status = cupy_has_device()
    if status is None:
        pytest.skip("CuPy is not installed")
    if not status:
        pytest.skip("CuPy sees no CUDA device here")
