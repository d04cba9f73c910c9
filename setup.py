"""Only the optional C extension lives here; everything else is in pyproject.toml.

``gputex._pngfilter`` unfilters PNG rows (gputex/pngdec.py). It is optional: where it does not
build (no C compiler), gputex installs anyway and decodes those PNGs through libpng instead.
"""

import os

from setuptools import Extension, setup

setup(ext_modules=[Extension("gputex._pngfilter", ["gputex/_pngfilter.c"], optional=True,
                             extra_compile_args=[] if os.name == "nt" else ["-O3"])])
