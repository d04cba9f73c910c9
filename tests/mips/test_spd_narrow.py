"""The single-pass chain's first pass as the GPU forms make it since helper h16why (issue 16): level 3
from the lanes' 32-bit sums (``spd.NARROW_LEVEL3``, ``mip_spd.wgsl``'s ``sg_narrow``), an RGBA base
texel's codes by ``pack4x8unorm`` (``PACK_CODES``) and one reciprocal a texel in the float estimates
(``RCP_EST``). GPUs take them; here they are forced on lavapipe (subgroups of 8 lanes) and the bytes
must be the integer chain's (``mips/integer.py``, itself tested against the float64 reference): full
and partial tiles, three-level first passes whose level-3 sums the next pass reads, stored levels
(the linear view: ``PACK_CODES``' path for sRGB too), and the workgroup-memory tables on and off."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels

import gputex
import gputex.kernels as kernels
import gputex.mips.spd as spd
import gputex.mips.stored as stored

CASES = [("rgba8unorm-srgb", 4, "srgb", "weighted"), ("rgba8unorm-srgb", 4, "srgb", "straight"),
         ("rgba8unorm", 4, "linear", "weighted"), ("rg8unorm", 2, "linear", "weighted"),
         ("r8unorm", 1, "linear", "straight")]


@pytest.fixture
def forms(gpu, monkeypatch):
    """The GPU forms and the subgroup form on, every mip_spd.wgsl compiled recorded."""
    if not gpu.has_feature("subgroup"):
        pytest.skip(f"{gpu.name}: no subgroup feature")
    seen: list[str] = []
    load = kernels.load_wgsl

    def recording(name, **subs):
        code = load(name, **subs)
        if name == "mip_spd.wgsl":
            seen.append(code)
        return code

    monkeypatch.setattr(spd, "SUBGROUPS", True)
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
    monkeypatch.setattr(spd, "NARROW_LEVEL3", True)
    monkeypatch.setattr(kernels, "load_wgsl", recording)
    gpu.cache(kernels.PIPELINES).items.clear()
    gpu.cache("mip-spd").items.clear()
    yield seen
    monkeypatch.undo()
    gpu.cache(kernels.PIPELINES).items.clear()
    gpu.cache("mip-spd").items.clear()


def _first_pass_took_the_narrow_form(seen: list[str]) -> bool:
    return any("SG_NARROW" not in code and "&& sg_narrow(wg.xy, t_sg, an_top)" in code for code in seen)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,space,alpha", CASES)
@pytest.mark.parametrize("w,h", [(512, 256), (128, 16), (128, 512)])
@pytest.mark.parametrize("smem", [False, True])
def test_level_3_from_the_lanes_32_bit_sums_gives_the_integer_chains_bytes(gpu, forms, monkeypatch, fmt, channels,
                                                                           space, alpha, w, h, smem):
    """512x256: full tiles, a second pass from the kept level-3 sums; 128x16: the self-check's partial
    tiles (levels one texel high); 128x512: a tall image."""
    monkeypatch.setattr(spd, "SMEM_TABLES", smem)
    a = _image(np.random.default_rng(2600 + 7 * channels + w + h), w, h, channels, 8, "holes")
    report, got = _levels(gpu, a, fmt, space, alpha, "exact")
    assert report.precision == "integer" and report.note == ""
    assert report.sources[:3] == [0, 0, 0]  # (a first pass of three levels: sg_narrow's case)
    assert _first_pass_took_the_narrow_form(forms)
    _, want = _levels(gpu, a, fmt, space, alpha, "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"{fmt} {alpha} {w}x{h} level {lv}"


@pytest.mark.gpu
def test_the_narrow_form_stores_the_integer_chains_bytes(gpu, forms, monkeypatch):
    """Stored levels: the base read through the linear view, so its RGBA codes come from pack4x8unorm."""
    monkeypatch.setattr(stored, "STORE_LEVELS", True)
    a = _image(np.random.default_rng(2690), 256, 512, 4, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, store_levels=True)
    try:
        assert tex.storage == "rgba8unorm"
        got = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()
    assert _first_pass_took_the_narrow_form(forms)
    assert "    store_level(i, x, y, codes);" in forms[-1]
    _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"level {lv}"


@pytest.mark.gpu
def test_without_the_narrow_form_the_first_pass_keeps_sg_levels(gpu, forms, monkeypatch):
    monkeypatch.setattr(spd, "NARROW_LEVEL3", False)
    a = _image(np.random.default_rng(2695), 256, 128, 4, 8, "holes")
    report, got = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    assert report.note == ""
    assert not _first_pass_took_the_narrow_form(forms)
    assert any("no_sg_narrow(wg.xy, t_sg, an_top)" in code for code in forms)
    _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"level {lv}"
