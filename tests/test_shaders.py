"""Every shader in the package compiles on the test adapter."""

from __future__ import annotations

from importlib import resources

import pytest

pytestmark = pytest.mark.gpu
SHADERS = sorted(p.name for p in resources.files("gputex").joinpath("shaders").iterdir() if p.name.endswith(".wgsl"))


def test_there_are_shaders():
    assert "mip_reduce.wgsl" in SHADERS and "mip_pack.wgsl" in SHADERS


@pytest.mark.parametrize("name", SHADERS)
def test_shader_compiles(gpu, name):
    from gputex.mips import shader_source

    # wgpu raises GPUValidationError on any parse or validation error; building a pipeline
    # also checks the entry point and the default override constants.
    module = gpu.device.create_shader_module(code=shader_source(name), label=name)
    gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
