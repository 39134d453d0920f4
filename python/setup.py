"""Wheel layout and tag only (the metadata is in pyproject.toml).

The package carries libgodali*.so (built by Go and copied in by `make python`) but no
Python extension: the wheel is platform-specific ("py3-none-<platform>", usable by any
Python 3 there) with everything in platlib, never tagged pure.
"""

import glob
import os
import sys

from setuptools import setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))

# The package is useless without the library: refuse to build or install it then, with
# the way out, rather than fail at the first `import godali` use. An sdist (sources
# only) is allowed.
if "sdist" not in sys.argv and not glob.glob(os.path.join(HERE, "godali", "lib",
                                                          "libgodali*.so")):
    sys.stderr.write(
        "\nerror: godali's library is not in python/godali/lib/.\n"
        "Build it and copy it into the package first, from the repository root:\n"
        "    make python && pip install ./python      (or: make wheel; pip install dist/*.whl)\n"
        "(make needs Go; scripts/setup.sh installs the rest.)\n\n")
    raise SystemExit(1)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


cmdclass = {}
try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel
except ImportError:  # building without wheel: sdist or a plain install
    pass

setup(distclass=BinaryDistribution, cmdclass=cmdclass)
