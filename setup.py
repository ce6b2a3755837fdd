"""Builds the solver's compiled search into the wheel; everything else is in pyproject.toml.

``engine/solver/native.c`` is a plain C library that ``engine/solver/native.py``
loads with ctypes, not a CPython extension module: it has no ``PyInit_``
function and uses no Python header. It is built as an Extension all the same,
so that ``pip install``, ``python -m build`` and editable installs compile it
with the platform's compiler, but under the name ``make native`` gives it in a
checkout, ``engine/solver/_native.so``, which is where ``native.py`` looks.

Without a working C compiler the build goes on without the library and says
so in its output (``pip install -v`` shows it); the solver then runs its
pure-Python search, and the server's start-up log and ``scorpion-engine
--version`` say which search is in use. ``SCORPION_REQUIRE_NATIVE=1`` turns a
failed compile into a failed build (CI sets it).

As the library uses no Python ABI, the wheel is tagged ``py3-none-<platform>``.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError


def required() -> bool:
    return os.environ.get("SCORPION_REQUIRE_NATIVE", "") not in ("", "0")


# Optional unless required: an editable install then copies the library into the
# checkout only when it was built.
NATIVE = Extension(
    "engine.solver._native",
    sources=["engine/solver/native.c"],
    extra_compile_args=["-O2", "-std=c11"],
    optional=not required(),
)


class BuildNativeLibrary(build_ext):
    """build_ext for a ctypes library: plain ``.so`` name, no exports, failure allowed.

    A library that could not be compiled is left out of the outputs, which an
    editable install links or copies into place and a wheel lists.
    """

    def initialize_options(self) -> None:
        super().initialize_options()
        self.not_built: set[str] = set()  # where the libraries that failed would be

    def get_outputs(self) -> list[str]:
        return [path for path in super().get_outputs() if not self.failed(path)]

    def get_output_mapping(self) -> dict[str, str]:
        mapping = super().get_output_mapping().items()
        return {built: placed for built, placed in mapping if not self.failed(built)}

    def failed(self, path: str) -> bool:
        return os.path.normpath(path) in self.not_built

    def get_ext_filename(self, fullname: str) -> str:
        return os.path.join(*fullname.split(".")) + ".so"

    def get_export_symbols(self, ext: Extension) -> list[str]:
        return []

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (BaseError, CCompilerError) as error:
            if required():
                raise
            self.not_built.add(os.path.normpath(self.get_ext_fullpath(ext.name)))
            print(
                f"scorpion-server: could not compile {ext.sources[0]} ({error}); "
                "the solver will run its pure-Python search, about 20 times slower",
                file=sys.stderr,
            )
            return
        built = self.get_ext_fullpath(ext.name)
        print(f"scorpion-server: built the compiled solver search {built}")


class PlatformWheel(bdist_wheel):
    """Any Python 3 on this platform: the library is native code, but not a Python extension."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    ext_modules=[NATIVE],
    cmdclass={"build_ext": BuildNativeLibrary, "bdist_wheel": PlatformWheel},
)
