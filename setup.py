"""Only the optional C extensions live here; everything else is in pyproject.toml.

``gputex._pngfilter`` unfilters PNG rows (gputex/pngdec.py). ``gputex._mipcpu`` makes the
exact integer mip chain on the host for CPU adapters (gputex/mips/cpu.py; it needs
``unsigned __int128``, so GCC or Clang); ``gputex._mipcpu128`` is the same source built with
128-bit sums, for bases over 2^24 texels. All are optional: where one does not build (no C
compiler), gputex installs anyway and decodes those PNGs through libpng / runs the mip shader
instead.
"""

import os

from setuptools import Extension, setup

_O3 = [] if os.name == "nt" else ["-O3"]
_PTHREAD = [] if os.name == "nt" else ["-pthread"]
setup(ext_modules=[Extension("gputex._pngfilter", ["gputex/_pngfilter.c"], optional=True, extra_compile_args=_O3),
                   Extension("gputex._mipcpu", ["gputex/_mipcpu.c"], optional=True,
                             extra_compile_args=_O3 + _PTHREAD, extra_link_args=_PTHREAD),
                   Extension("gputex._mipcpu128", ["gputex/_mipcpu128.c"], depends=["gputex/_mipcpu.c"], optional=True,
                             extra_compile_args=_O3 + _PTHREAD, extra_link_args=_PTHREAD)])
