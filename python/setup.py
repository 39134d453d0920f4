"""Wheel layout and tag only (the metadata is in pyproject.toml).

The package carries libgodali*.so (built by Go and copied in by `make python`) but no
Python extension: the wheel is platform-specific ("py3-none-<platform>", usable by any
Python 3 there) with everything in platlib, never tagged pure.
"""

from setuptools import setup
from setuptools.dist import Distribution


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
