"""vramkit under CuPy: the refusal class, and allocation on a CUDA device (skipped
where CuPy or a device is missing)."""

import importlib.util
import subprocess
import sys

import pytest

from subproc import check_script, needs_cuda_cupy, script_env


def test_cupy_allocates_frees_and_refuses_through_vramkit():
    needs_cuda_cupy()
    assert check_script("cupy_alloc.py").strip().endswith("OK")


def test_importing_without_cupy_says_what_is_missing():
    code = (
        "import sys\n"
        "sys.modules['cupy'] = None  # as if CuPy were not installed\n"
        "try:\n"
        "    import vramkit.cupy\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=script_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "vramkit.cupy needs CuPy" in proc.stdout


def test_refusal_class_is_cupys_and_vramkits():
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    code = (
        "import pickle, cupy, vramkit, vramkit.cupy as vc\n"
        "e = vc.OutOfMemoryError(100, 5, 50, 'the message', vramkit.ErrorKind.OVER_BUDGET)\n"
        "assert isinstance(e, cupy.cuda.memory.OutOfMemoryError)\n"
        "assert isinstance(e, vramkit.OutOfMemoryError) and isinstance(e, MemoryError)\n"
        "assert str(e) == 'the message' and e.kind == vramkit.ErrorKind.OVER_BUDGET\n"
        "back = pickle.loads(pickle.dumps(e))\n"
        "assert type(back) is vc.OutOfMemoryError and str(back) == 'the message' and back._size == 100\n"
        "print('OK')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=script_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
