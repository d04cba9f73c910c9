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
    from gputex.kernels import load_wgsl

    for name in ("mip_reduce.wgsl", "mip_pack.wgsl", "mip3d.wgsl"):
        assert load_wgsl(name).startswith(FILES["mip_common.wgsl"])
    for name in ("mip_exact.wgsl", "mip_exact_kernel.wgsl"):
        assert load_wgsl(name).startswith(FILES["mip_f64.wgsl"])


def test_one_substitution_scheme():
    """Placeholders are whole words, replaced by the caller's value or the file's //! default;
    a name the shader does not hold is an error, not a silent no-op."""
    from gputex.kernels import load_wgsl

    assert "texture_storage_2d<rgba8unorm, write>" in load_wgsl("mip_reduce.wgsl")
    assert "texture_storage_2d<rgba16float, write>" in load_wgsl("mip_reduce.wgsl", OUT_FORMAT="rgba16float")
    assert "alias Sampled = u32;" in load_wgsl("reduce.wgsl", SAMPLED="u32")
    assert "alias Sampled = f32;" in load_wgsl("reduce.wgsl")
    with pytest.raises(ValueError, match=r"^mip_pack.wgsl: no placeholder OUT_FORMT in the shader$"):
        load_wgsl("mip_pack.wgsl", OUT_FORMT="r8unorm")


@pytest.mark.parametrize("name", SHADERS)
def test_shader_compiles(gpu, name):
    # wgpu raises GPUValidationError on any parse or validation error; building a pipeline
    # also checks the entry point and the default override constants.
    import re

    from gputex.kernels import load_wgsl as shader_source

    code = shader_source(name)
    codes = [code]
    if name == "bc_encode.wgsl":  # assembled per format and quality: BC3 holds bc_color + bc_ramp, BC7 the
        from gputex.bcenc import shader_source as bc_source  # bc7_* files, BC6H bc6h_encode

        codes = [bc_source(3, False, "best", False, True), bc_source(7, False, "best", True, False),
                 bc_source(6, False, "normal", False, False)]
    if name == "mip_spd_first.wgsl":  # an entry put into mip_spd.wgsl's text, with the subgroup form (spd.FIRST_ENTRY)
        from gputex.mips import spd

        if not gpu.has_feature("subgroup"):
            pytest.skip(f"{gpu.name}: no subgroup feature")
        subs = {**spd.SG_SUBS, "SG_LEVEL3N": "sg_level3n", "SG_NARROW": "true"}
        first = shader_source(name, **{k: subs[k] for k in spd.FIRST_KEYS if k in subs})
        codes = [shader_source("mip_spd.wgsl", **subs, FIRST_CODE=first)]
        assert "fn first_main(" in codes[0]
    for code in codes:
        module = gpu.device.create_shader_module(code=code, label=name)
        entries = re.findall(r"@compute[^\n]*\nfn (\w+)", code)
        assert entries
        for entry in entries:
            gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})


def test_pipelines_are_cached_by_name(gpu):
    """A second identical chain compiles nothing: every pipeline comes from the session's named
    ``pipelines`` cache (gputex/kernels.py), whose hits grow while its misses stay."""
    import numpy as np

    import gputex
    from gputex.kernels import cache_stats

    a = np.arange(9 * 7 * 4, dtype=np.uint8).reshape(7, 9, 4)
    for _ in range(2):  # the first chain fills the cache (this test may run first)
        gputex.upload(gpu, gputex.from_array(a), "rgba16float", mips=True, filter="triangle").destroy()
    before = cache_stats(gpu)["pipelines"]
    gputex.upload(gpu, gputex.from_array(a), "rgba16float", mips=True, filter="triangle").destroy()
    after = cache_stats(gpu)["pipelines"]
    assert after["misses"] == before["misses"] and after["hits"] > before["hits"]
    assert after["entries"] == before["entries"] > 0


def test_no_module_reaches_into_the_session_cache():
    """Caches are reached through ``session.cache(name)``; only device.py holds ``_cache``."""
    import re

    root = resources.files("gputex")
    offenders = [p.name for p in root.iterdir() if p.name.endswith(".py") and p.name != "device.py"
                 and re.search(r"\._cache\b", p.read_text())]
    offenders += ["mips/" + p.name for p in root.joinpath("mips").iterdir() if p.name.endswith(".py")
                  and re.search(r"\._cache\b", p.read_text())]
    assert offenders == []
