"""Every shader in the package compiles on the test adapter."""

from __future__ import annotations

from importlib import resources

import pytest

FILES = {p.name: p.read_text() for p in resources.files("gputex").joinpath("shaders").iterdir()
         if p.name.endswith(".wgsl")}
SHADERS = sorted(name for name, code in FILES.items() if "@compute" in code)


def test_there_are_shaders():
    assert {"mip_reduce.wgsl", "mip_pack.wgsl", "reduce.wgsl"} <= set(SHADERS)


def test_shared_mip_code_is_prepended():
    from gputex.mips import shader_source

    for name in ("mip_reduce.wgsl", "mip_pack.wgsl"):
        assert shader_source(name).startswith(FILES["mip_common.wgsl"])


@pytest.mark.parametrize("name", SHADERS)
def test_shader_compiles(gpu, name):
    # wgpu raises GPUValidationError on any parse or validation error; building a pipeline
    # also checks the entry point and the default override constants.
    import re

    from gputex.mips import shader_source

    code = shader_source(name)
    codes = [code]
    if name == "bc_encode.wgsl":  # assembled per format and quality: BC3 holds bc_color + bc_ramp, BC7 the
        from gputex.bcenc import shader_source as bc_source  # bc7_* files, BC6H bc6h_mode11

        codes = [bc_source(3, False, "best", False, True), bc_source(7, False, "best", True, False),
                 bc_source(6, False, "normal", False, False)]
    for code in codes:
        module = gpu.device.create_shader_module(code=code, label=name)
        entries = re.findall(r"@compute[^\n]*\nfn (\w+)", code)
        assert entries
        for entry in entries:
            gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})
