"""setup.py: the part of `pip install .` that pyproject.toml cannot say: libaxon is built
with CMake (Release, the tests left out) into setuptools' temporary folder, and
libaxon.so.0 and the backend plugins built beside it (libaxon_opencl.so,
libaxon_cuda.so: CMake's AXON_OPENCL and AXON_CUDA decide, AUTO by default) are copied
into the package, where python/axon/_lib.py looks first and libaxon finds its plugins
(its own folder). AXON_CMAKE_ARGS adds options to the configure step, e.g.
AXON_CMAKE_ARGS="-DAXON_CUDA=OFF". The wheel is for this machine (its BLAS, its
plugins' runtimes): pip builds it here, as Debian's own packages are built."""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        return re.search(r"project\(axon VERSION ([0-9.]+)", cmake.read()).group(1)


class BuildWithLibaxon(build_py):
    def run(self):
        super().run()
        build = os.path.join(os.path.abspath(self.build_lib), "..", "cmake-axon")
        build = os.path.normpath(build)
        jobs = str(os.cpu_count() or 1)
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     *shlex.split(os.environ.get("AXON_CMAKE_ARGS", ""))]
        self.announce("axon: " + " ".join(configure), level=2)
        subprocess.check_call(configure)
        targets = subprocess.run(["cmake", "--build", build, "--target", "help"],
                                 capture_output=True, text=True, check=True).stdout
        plugins = [name for name in ("axon_opencl", "axon_cuda")
                   if re.search(rf"\b{name}\b", targets)]
        subprocess.check_call(["cmake", "--build", build, "-j", jobs, "--target", "axon_shared",
                               *plugins])
        package = os.path.join(self.build_lib, "axon")
        library = os.path.join(build, "libaxon.so.0")
        shutil.copy2(os.path.realpath(library), os.path.join(package, "libaxon.so.0"))
        for plugin in plugins:
            name = "lib" + plugin + ".so"
            if os.path.exists(os.path.join(build, name)):
                shutil.copy2(os.path.join(build, name), os.path.join(package, name))



try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        """A wheel tagged for this platform: it carries a compiled library."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

    commands = {"build_py": BuildWithLibaxon, "bdist_wheel": PlatformWheel}
except ImportError:  # no wheel package: pip then installs without a wheel
    commands = {"build_py": BuildWithLibaxon}

if sys.platform != "linux":
    sys.exit("axon's package builds on Linux only (glibc: dlmopen, /proc)")

# Not build/: that is the CMake build tree the docs and scripts use.
setup(version=version(), cmdclass=commands, options={"build": {"build_base": "build-python"}})
