"""pip's build of the `kiln` package: CMake builds the extension, the
runtime library and the tools (or reuses the build in $KILN_BUILD_DIR,
default build/, configuring it first where it is not), and its `python`
install component lays them out in the wheel: kiln/__init__.py, the
extension kiln/_kiln*.so, kiln/lib/libkiln_runtime.so, and kilnc,
kiln-run, kiln-generate, kiln-serve and kiln-tokenize in kiln/bin, each
finding the runtime through an $ORIGIN-relative RPATH
(python/CMakeLists.txt). The version is the CMake project's."""

import os
import re
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(kiln [^)]*VERSION ([0-9.]+)\)", f.read()).group(1)


class BuildWithCMake(build_ext):
    """Runs as build_ext: the package has no Python modules for setuptools
    to build, only what CMake lays out."""

    def run(self):
        build_dir = os.path.abspath(os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build")))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja"])
        subprocess.check_call(["cmake", "--build", build_dir, "-j", os.environ.get("KILN_JOBS", "2"),
                               "--target", "kiln-python-package", "kilnc", "kiln-run",
                               "kiln-generate", "kiln-serve", "kiln-tokenize"])
        subprocess.check_call(["cmake", "--install", build_dir, "--component", "python",
                               "--prefix", os.path.abspath(self.build_lib)])


class BinaryDistribution(Distribution):
    """A wheel for this platform: the package holds native code."""

    def has_ext_modules(self):
        return True


setup(version=project_version(), cmdclass={"build_ext": BuildWithCMake},
      distclass=BinaryDistribution,
      # Not build/: that is CMake's tree (its lib/ holds the runtime).
      options={"build": {"build_base": os.path.join("build", "pip")}})
