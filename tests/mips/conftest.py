"""The mip tests hold the shaders to their contract: on a CPU adapter (lavapipe, what CI runs)
the integer chain would otherwise be made by the host's C engine (:mod:`gputex.mips.cpu`), so
every test here runs with ``GPUTEX_MIPS_ENGINE=shader`` (the ``mip_shader`` fixture) unless it
sets the engine itself (``tests/mips/test_cpu_engine.py``)."""

import pytest


@pytest.fixture(autouse=True)
def _shader_engine(mip_shader):
    pass
