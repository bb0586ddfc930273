"""Builds the vramkit Python package: pure Python over ctypes, plus the C library.

``pip install ./python`` (from the repository root) runs, through ``build_py`` below::

    cargo build --release -p vramkit-capi --manifest-path <repo>/Cargo.toml

and copies the resulting ``libvramkit_capi.so`` and the header ``vramkit.h`` into the
installed package (``vramkit/_native/``). ``<repo>`` is the parent of this folder
(override with ``VRAMKIT_SOURCE_DIR``); ``CARGO`` names the cargo to run and
``CARGO_TARGET_DIR`` is honoured (cargo reports where it put the library). The wheel is
tagged ``py3-none-<platform>``: it holds a native library but no Python extension, so
one wheel serves every Python 3 version on the platform.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

HERE = Path(__file__).resolve().parent
CRATE = "vramkit-capi"
TARGET = "vramkit_capi"  # the crate's library target name
LIBRARY_NAME = "libvramkit_capi.dylib" if sys.platform == "darwin" else "libvramkit_capi.so"


def source_dir() -> Path:
    """The vramkit repository (its Cargo workspace), with a clear error if absent."""
    root = Path(os.environ.get("VRAMKIT_SOURCE_DIR", HERE.parent)).resolve()
    if not (root / "Cargo.toml").is_file() or not (root / "capi" / "include" / "vramkit.h").is_file():
        raise SystemExit(
            f"vramkit: {root} is not the vramkit repository (no Cargo.toml and capi/include/vramkit.h).\n"
            "Install from a checkout with `pip install ./python` run at its root, or set "
            "VRAMKIT_SOURCE_DIR to the repository."
        )
    return root


def cargo_build(root: Path) -> Path:
    """Runs cargo for the C library; returns the path of the built shared library."""
    cargo = os.environ.get("CARGO", "cargo")
    cmd = [
        cargo, "build", "--release", "-p", CRATE,
        "--manifest-path", str(root / "Cargo.toml"),
        "--message-format=json-render-diagnostics",
    ]
    print("vramkit: running " + " ".join(cmd), file=sys.stderr, flush=True)
    try:
        proc = subprocess.run(cmd, cwd=root, stdout=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise SystemExit(
            f"vramkit: cargo ({cargo!r}) was not found. The package builds its C library with "
            "Rust's cargo: install Rust (rustup) or point the CARGO variable at cargo."
        ) from None
    if proc.returncode != 0:
        raise SystemExit(
            f"vramkit: `{' '.join(cmd)}` failed with exit code {proc.returncode}; "
            "its errors are printed above."
        )
    built = None
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact" or msg.get("target", {}).get("name") != TARGET:
            continue
        if "cdylib" not in msg["target"].get("kind", []):
            continue
        for name in msg.get("filenames", []):
            if Path(name).name == LIBRARY_NAME:
                built = Path(name)
    if built is None or not built.is_file():
        raise SystemExit(
            f"vramkit: cargo finished but reported no {LIBRARY_NAME} for the crate {CRATE}; "
            "is its [lib] crate-type \"cdylib\"?"
        )
    return built


class build_py(_build_py):
    """Also builds the C library and puts it and its header in vramkit/_native/."""

    def run(self):
        super().run()
        root = source_dir()
        library = cargo_build(root)
        if getattr(self, "editable_mode", False):
            # An editable install imports vramkit from the checkout, which finds the
            # library in the Cargo target directory.
            return
        native = Path(self.build_lib) / "vramkit" / "_native"
        native.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(library, native / LIBRARY_NAME)
        os.chmod(native / LIBRARY_NAME, 0o755)
        shutil.copyfile(root / "capi" / "include" / "vramkit.h", native / "vramkit.h")
        print(f"vramkit: packaged {library} and vramkit.h into {native}", file=sys.stderr, flush=True)


class bdist_wheel(_bdist_wheel):
    """A platform wheel for any Python 3: py3-none-<platform>."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(cmdclass={"build_py": build_py, "bdist_wheel": bdist_wheel})
