"""vramkit under PyTorch on a CUDA device (skipped where there is none).

Each test runs a script of tests/scripts in fresh processes: the allocator must be
installed before CUDA starts, and a comparison needs one process per allocator.
"""

import json
import re

import pytest

from subproc import check_script, needs_cuda_torch


@pytest.fixture(autouse=True)
def _needs_cuda():
    needs_cuda_torch()


def last_json(stdout):
    """The last line of a script's output that is a JSON object."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON line in the output:\n{stdout}")


def test_training_losses_are_bit_identical_to_pytorchs_allocator():
    default = last_json(check_script("train.py", "default"))
    ours = last_json(check_script("train.py", "vramkit"))
    assert ours["allocations"] > 0, "vramkit served no allocation"
    assert len(default["losses"]) == 20
    assert ours["losses"] == default["losses"]


def test_two_streams_never_see_each_others_freed_memory():
    out = check_script("two_streams.py")
    cases = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert {c["case"] for c in cases} == {"free_on_a", "record_stream"}
    for c in cases:
        assert c["busy"] and c["wrong"] == 0, c
    assert out.strip().endswith("OK")


def test_backward_allocates_from_autograd_threads_with_identical_grads():
    default = last_json(check_script("autograd.py", "default"))
    ours = last_json(check_script("autograd.py", "vramkit"))
    assert not ours["errors"], ours["errors"]
    assert ours["hooks_off_main_thread"], "the hooks ran on the main thread; no autograd thread allocated"
    assert ours["backward_mallocs"] > 0
    assert ours["digest"] == default["digest"]
    assert ours["thread_digests"] == [default["digest"]] * 4


def test_over_budget_raises_torch_out_of_memory_error_with_vramkits_message():
    result = last_json(check_script("oom.py"))
    message = result["message"]
    assert result["refusals"] >= 1
    assert result["budget"] == 1 << 30
    assert re.search(r"\b2147483648 bytes\b", message), message
    assert re.search(r"budget of 1073741824 bytes\b", message), message
    assert "largest free range" in message, message


def test_enable_after_cuda_started_refuses():
    assert check_script("torch_patches.py", "late").strip().endswith("OK")


def test_memory_stats_empty_cache_and_memory_fraction():
    assert check_script("torch_patches.py", "patches").strip().endswith("OK")
