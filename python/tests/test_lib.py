"""The ctypes declarations match vramkit.h, and a missing library is reported clearly."""

import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import vramkit
from vramkit import _lib

# The header: the installed copy, else the checkout's.
_HEADERS = [_lib.NATIVE_DIR / "vramkit.h", Path(__file__).resolve().parents[2] / "capi" / "include" / "vramkit.h"]
HEADER = next((p for p in _HEADERS if p.is_file()), None)

C_TYPES = {
    "void *": ctypes.c_void_p,
    "void": None,
    "int": ctypes.c_int,
    "size_t": ctypes.c_size_t,
    "ssize_t": ctypes.c_ssize_t,
    "double": ctypes.c_double,
    "uint64_t": ctypes.c_uint64,
    "uint32_t": ctypes.c_uint32,
    "const char *": ctypes.c_char_p,
    "char *": ctypes.c_char_p,
}


def _header_text():
    if HEADER is None:
        pytest.fail(f"vramkit.h not found in any of {_HEADERS}")
    text = HEADER.read_text()
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _ctype(decl):
    """The ctypes type of a C declaration's type part ("const char *path" -> c_char_p)."""
    decl = " ".join(decl.replace("*", " * ").split())
    decl = re.sub(r"\s*\*\s*", " *", decl).strip()
    if decl.endswith("vramkit_stats *"):
        return "stats*"
    return C_TYPES[decl]


def header_functions():
    """name -> (restype, [argtypes]) of every function the header declares."""
    found = {}
    pattern = re.compile(r"^([\w\s\*]+?)\s*\b(vramkit_\w+)\s*\(([^)]*)\)\s*;", re.M)
    for ret, name, params in pattern.findall(_header_text()):
        args = []
        for param in params.split(","):
            param = param.strip()
            if param in ("void", ""):
                continue
            type_part = re.sub(r"\b\w+$", "", param)  # drop the parameter's name
            args.append(_ctype(type_part))
        found[name] = (_ctype(ret), args)
    return found


def test_every_header_function_is_declared_with_its_types():
    declared = header_functions()
    assert set(declared) == set(_lib.PROTOTYPES), "header and PROTOTYPES list different functions"
    for name, (restype, argtypes) in declared.items():
        ours_res, ours_args = _lib.PROTOTYPES[name]
        assert ours_res == restype, name
        assert len(ours_args) == len(argtypes), name
        for ours, theirs in zip(ours_args, argtypes):
            if theirs == "stats*":
                assert ours == ctypes.POINTER(_lib.Stats), name
            else:
                assert ours == theirs, name


def test_stats_struct_follows_the_header_field_order():
    body = re.search(r"typedef struct vramkit_stats \{(.*?)\} vramkit_stats;", _header_text(), re.S).group(1)
    fields = re.findall(r"uint64_t\s+(\w+);", body)
    assert [name for name, _ in _lib.Stats._fields_] == fields
    assert ctypes.sizeof(_lib.Stats) == 8 * len(fields)
    assert vramkit.STATS_FIELDS == tuple(fields)


def test_error_kinds_follow_the_header():
    values = dict(re.findall(r"VRAMKIT_(\w+)\s*=\s*(\d+)", _header_text()))
    assert {k: int(v) for k, v in values.items()} == {k.name: k.value for k in vramkit.ErrorKind}


def test_loaded_library_is_a_candidate():
    path = vramkit.library_path()
    assert path.is_file()
    assert path.name == _lib.LIBRARY_NAME


def _run(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_missing_library_says_how_to_build_it(tmp_path):
    missing = tmp_path / "nothing.so"
    proc = _run("import vramkit; vramkit.stats()", VRAMKIT_LIBRARY=str(missing))
    assert proc.returncode != 0
    assert "LibraryNotFoundError" in proc.stderr
    assert str(missing) in proc.stderr
    assert "VRAMKIT_LIBRARY" in proc.stderr


def test_unloadable_library_names_the_file(tmp_path):
    bogus = tmp_path / _lib.LIBRARY_NAME
    bogus.write_text("not a shared library")
    proc = _run("import vramkit; vramkit.stats()", VRAMKIT_LIBRARY=str(bogus))
    assert proc.returncode != 0
    assert "could not be loaded" in proc.stderr
    assert str(bogus) in proc.stderr


def test_import_needs_no_library(tmp_path):
    proc = _run("import vramkit; print(vramkit.parse_size('1KiB'))", VRAMKIT_LIBRARY=str(tmp_path / "none.so"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1024"
