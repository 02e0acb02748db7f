"""Builds the widejit shared library into the package when it can (pyproject.toml has the rest).

From a widejit checkout, with the Go toolchain and a C compiler (gcc, or $CC), `pip install
./python` compiles cmd/libwidejit into widejit/libwidejit.so (go build -buildmode=c-shared),
which `widejit.compile` loads in process; the wheel is then tagged for this platform. Without
them the package installs without the library (`widejit.run` then uses the binary) and
records why, which `widejit.compile` says; WIDEJIT_REQUIRE_LIBRARY=1 makes that an install
error instead.
"""

import json
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: pip cannot build wheels either
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODULE = "module github.com/widejit/widejit"


def missing():
    """Why the library cannot be built here ("" when it can)."""
    try:
        with open(os.path.join(ROOT, "go.mod")) as f:
            if f.readline().strip() != MODULE or not os.path.isdir(os.path.join(ROOT, "cmd", "libwidejit")):
                raise OSError
    except OSError:
        return "the package is not being built from a widejit checkout (%s holds no widejit go.mod and cmd/libwidejit)" % ROOT
    if not shutil.which("go"):
        return "the Go toolchain (go) is not on PATH (https://go.dev/dl, or Debian's golang-go)"
    cc = os.environ.get("CC", "gcc").split()[0]
    if not shutil.which(cc):
        return "no C compiler for cgo: %s is not on PATH (apt-get install gcc)" % cc
    return ""


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        why = missing()
        info = os.path.join(self.build_lib, "widejit", "_library.json")
        if why:
            if os.environ.get("WIDEJIT_REQUIRE_LIBRARY") == "1":
                sys.exit("widejit: cannot build the shared library: " + why)
            print("widejit: WARNING: installing without the shared library (widejit.compile needs it): " + why,
                  file=sys.stderr)
        else:
            out = os.path.abspath(os.path.join(self.build_lib, "widejit", "libwidejit.so"))
            cmd = ["go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./cmd/libwidejit"]
            print("widejit: " + " ".join(cmd), file=sys.stderr)
            proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, CGO_ENABLED="1"), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, encoding="utf-8", errors="replace")
            if proc.returncode != 0:
                sys.exit("widejit: building the shared library failed (%s):\n%s" % (" ".join(cmd), proc.stdout))
            header = os.path.splitext(out)[0] + ".h"
            if os.path.exists(header):
                os.remove(header)
        with open(info, "w") as f:
            json.dump({"missing": why}, f)


cmdclass = {"build_py": BuildWithLibrary}

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """A wheel holding the library is for this platform (any Python 3: no CPython ABI)."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = bool(missing())

        def get_tag(self):
            tag = super().get_tag()
            return tag if self.root_is_pure else ("py3", "none", tag[2])

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass)
