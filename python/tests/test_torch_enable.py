"""vramkit.torch.enable's plumbing, which needs a CUDA build of PyTorch but no GPU."""

import subprocess
import sys

import pytest

from subproc import check_script, needs_torch, script_env


def test_enable_installs_allocator_and_patches():
    needs_torch()
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(hasattr(torch._C, '_cuda_customAllocator'))"],
        capture_output=True, text=True, env=script_env(), timeout=300,
    )
    if probe.stdout.strip() != "True":
        pytest.skip("this PyTorch is not a CUDA build")
    assert check_script("enable_plumbing.py").strip().endswith("OK")


def test_memory_stats_keys_follow_torch():
    import vramkit.torch

    ms = vramkit.torch.memory_stats(0)
    s = vramkit.stats(0)
    assert ms["allocated_bytes.all.current"] == s["in_use"]
    assert ms["reserved_bytes.all.peak"] == s["peak_reserved"]
    assert ms["allocation.all.freed"] == s["releases"]
    assert ms["num_ooms"] == s["refusals"]
    assert vramkit.torch.memory_reserved(0) == s["reserved"]
