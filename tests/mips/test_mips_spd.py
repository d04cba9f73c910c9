"""The single-pass integer box chain (gputex/mips/spd.py, mip_spd.wgsl): its bytes equal the integer
chain's (gputex/mips/integer.py, ``precision="int"``) and the Python model's (intbox.model_chain), and every
level is the float64 reference's rounding (tests/reference.py; tolerance 0 except within
intbox.EPSILON_LSB of a tie), for sizes within one tile, across several tiles, over several
passes, non-square down to one texel on an axis; the sizes it does not serve keep the integer
chain; its self-check's fallback."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels, assert_correctly_rounded

from gputex.layout import mip_count
from gputex.mips import spd
from gputex.mips.intbox import model_chain
from gputex.mips.spd import spd_plan

from reference import filter_levels

# within one tile, several tiles on each axis, several passes, one axis reaching 1 early
SPD_SIZES = [(2, 1), (1, 2), (2, 2), (64, 64), (16, 256), (256, 8), (128, 64), (512, 256)]
# sizes it does not serve (odd footprints): the integer chain makes them, same bytes
OTHER_SIZES = [(96, 48), (1, 1), (3, 5), (7, 13), (13, 7), (61, 37), (257, 131)]
FORMATS = [("rgba8unorm", 4, 8), ("rgba8unorm-srgb", 4, 8), ("bgra8unorm-srgb", 4, 8), ("rg8unorm", 2, 8),
           ("r8unorm", 1, 8), ("rgba16unorm", 4, 16), ("rg16unorm", 2, 16), ("r16unorm", 1, 16)]


def test_plan_serves_halving_chains_only():
    assert spd_plan(8192, 8192, 14) == [(0, 6), (6, 6), (12, 1)]
    assert spd_plan(4096, 4096, 13) == [(0, 6), (6, 6)]
    assert spd_plan(2, 1, 2) == [(0, 1)]
    assert spd_plan(256, 8, 9) == [(0, 6), (6, 2)]
    assert spd_plan(96, 48, 5) == [(0, 4)]  # 96x48 -> 48x24 -> 24x12 -> 12x6 -> 6x3: all halve
    assert spd_plan(96, 48, 6) is None  # 6x3 -> 3x1 does not
    # a first pass of three levels (the GPU forms: spd.SPLIT_FIRST), then six a pass
    assert spd_plan(4096, 4096, 13, first=3) == [(0, 3), (3, 6), (9, 3)]
    assert spd_plan(8192, 8192, 14, first=3) == [(0, 3), (3, 6), (9, 4)]
    assert spd_plan(16, 1, 5, first=3) == [(0, 3), (3, 1)]
    assert spd_plan(2, 1, 2, first=3) == [(0, 1)]
    assert spd_plan(1024, 512, 11, 4, first=3) == [(0, 3), (3, 4), (7, 3)]
    for w, h in [(8191, 8191), (4095, 4097), (7, 13), (3, 2), (6, 4)]:
        assert spd_plan(w, h, mip_count(w, h)) is None


@pytest.mark.gpu
@pytest.mark.parametrize("w,h", SPD_SIZES + OTHER_SIZES)
@pytest.mark.parametrize("space,alpha", [("srgb", "weighted"), ("srgb", "straight"), ("linear", "weighted"),
                                         ("linear", "premultiplied")])
def test_rgba8_equals_the_integer_chain_and_the_reference(gpu, w, h, space, alpha):
    rng = np.random.default_rng(1700 + w * 11 + h)
    for alpha_kind in ("opaque", "holes"):
        a = _image(rng, w, h, 4, 8, alpha_kind)
        report, got = _levels(gpu, a, "rgba8unorm", space, alpha, "exact")
        ref_report, want = _levels(gpu, a, "rgba8unorm", space, alpha, "int")
        if w * h > 1:  # (a 1x1 image has no levels to make)
            assert report.precision == ref_report.precision == "integer" and report.note == ""
        plan = spd_plan(w, h, mip_count(w, h)) and spd.chain_plan(gpu, w, h, mip_count(w, h), False)[0]
        if plan:  # the single-pass chain made it: each level from its pass's source
            assert report.sources == [s for s, n in plan for _ in range(n)]
        ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=alpha)
        for lv, (g, i, r) in enumerate(zip(got, want, ref), start=1):
            what = f"{w}x{h} {space} {alpha} {alpha_kind} level {lv}"
            assert np.array_equal(g, i), f"{what}: differs from the integer chain"
            assert_correctly_rounded(g, r, 255, what)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits", FORMATS)
@pytest.mark.parametrize("w,h", [(128, 64), (64, 1), (16, 512)])
def test_formats_equal_the_model(gpu, fmt, channels, bits, w, h):
    rng = np.random.default_rng(1800 + w + h + channels * 3 + bits)
    space = "linear" if fmt.startswith("r") and not fmt.startswith("rgba") and bits == 8 else "srgb"
    a = _image(rng, w, h, channels, bits, "holes")
    report, got = _levels(gpu, a, fmt, space, "weighted", "exact")
    assert report.precision == "integer" and report.note == ""
    want = model_chain(a.tolist(), channels, bits, space == "srgb", True, mip_count(w, h))
    top = (1 << bits) - 1
    ref = filter_levels(a / top, channels, srgb=space == "srgb", alpha_mode="weighted")
    for lv, (g, m, r) in enumerate(zip(got, want, ref), start=1):
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{fmt} {w}x{h} level {lv}: != model"
        assert_correctly_rounded(g.reshape(r.shape), r, top, f"{fmt} {w}x{h} level {lv}")


@pytest.mark.gpu
def test_large_chain_equals_the_integer_chain(gpu):
    """1024x2048: level 0 over many workgroups, three passes, a stored level read across tiles."""
    a = _image(np.random.default_rng(1900), 1024, 2048, 4, 8, "holes")
    for space, alpha in [("srgb", "weighted"), ("linear", "straight")]:
        _, got = _levels(gpu, a, "rgba8unorm-srgb" if space == "srgb" else "rgba8unorm", space, alpha, "exact")
        _, want = _levels(gpu, a, "rgba8unorm-srgb" if space == "srgb" else "rgba8unorm", space, alpha, "int")
        for lv, (g, i) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, i), f"{space} {alpha} level {lv}"


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,space", [("rgba8unorm-srgb", "srgb"), ("rgba16unorm", "srgb"), ("rg8unorm", "linear")])
def test_float_screen_gives_the_exact_search_bytes(gpu, monkeypatch, fmt, space):
    """Codes the float estimate decides (clearly inside a code's interval) equal the exact search's."""
    import gputex.mips.spd as spd

    channels, bits = {"rgba8unorm-srgb": (4, 8), "rgba16unorm": (4, 16), "rg8unorm": (2, 8)}[fmt]
    a = _image(np.random.default_rng(1950), 256, 64, channels, bits, "holes")
    _, screened = _levels(gpu, a, fmt, space, "weighted", "exact")
    monkeypatch.setattr(spd, "SCREEN", False)
    report, searched = _levels(gpu, a, fmt, space, "weighted", "exact")
    assert report.precision == "integer" and report.note == ""
    for lv, (g, e) in enumerate(zip(screened, searched), start=1):
        assert np.array_equal(g, e), f"level {lv}"


@pytest.mark.gpu
@pytest.mark.parametrize("smem", [True, False])
def test_code_tables_in_workgroup_memory_or_not_give_the_same_bytes(gpu, monkeypatch, smem):
    """8-bit sRGB: the tables copied into workgroup memory (GPUs) or read from the buffer (CPU
    adapters) give the integer chain's bytes."""
    import gputex.mips.spd as spd

    monkeypatch.setattr(spd, "SMEM_TABLES", smem)
    a = _image(np.random.default_rng(1960), 256, 128, 4, 8, "holes")
    for alpha in ("weighted", "straight"):
        report, got = _levels(gpu, a, "rgba8unorm-srgb", "srgb", alpha, "exact")
        assert report.precision == "integer" and report.note == ""
        _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", alpha, "int")
        for lv, (g, i) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, i), f"{alpha} level {lv}"


@pytest.mark.gpu
@pytest.mark.parametrize("round_a_level", [True, False])
@pytest.mark.parametrize("w,h", [(512, 256), (16, 512), (1024, 4)])
def test_tile_levels_one_or_two_a_round_give_the_same_bytes(gpu, monkeypatch, round_a_level, w, h):
    """Levels 3.. of a pass summed one level a barrier (GPUs) or two (CPU adapters): the integer
    chain's bytes, two passes, one axis stopping early."""
    import gputex.mips.spd as spd

    monkeypatch.setattr(spd, "ROUND_A_LEVEL", round_a_level)
    a = _image(np.random.default_rng(1970 + w), w, h, 4, 8, "holes")
    for space, alpha in [("srgb", "weighted"), ("linear", "straight")]:
        report, got = _levels(gpu, a, "rgba8unorm-srgb" if space == "srgb" else "rgba8unorm", space, alpha, "exact")
        assert report.precision == "integer" and report.note == ""
        plan, _ = spd.chain_plan(gpu, w, h, mip_count(w, h), False)
        assert report.sources == [s for s, n in plan for _ in range(n)]
        _, want = _levels(gpu, a, "rgba8unorm-srgb" if space == "srgb" else "rgba8unorm", space, alpha, "int")
        for lv, (g, i) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, i), f"{space} {alpha} level {lv}"


@pytest.mark.gpu
def test_failed_self_check_falls_back_to_the_integer_chain(gpu, monkeypatch):
    import gputex.mips.intbox as intbox
    import gputex.mips.integer as integer

    key = ("mip-spd-self-check", "rg8unorm", "linear", True)
    gpu.cache("mip-spd").pop(key)
    monkeypatch.setattr(spd, "SUBGROUPS", False)  # (a GPU's subgroup form: its own check, test_spd_subgroups.py)
    real = intbox.model_chain
    expected = integer.expected_levels

    def wrong(codes, *args):  # an adapter that disagrees (only for the single-pass check's image)
        levels = expected(codes, *args)
        if codes.shape[0] == spd.CHECK_SIZE[1]:
            levels[1][0, 0] ^= 1
        return levels

    monkeypatch.setattr(integer, "expected_levels", wrong)
    try:
        a = _image(np.random.default_rng(1664), 8, 4, 2, 8, "holes")
        report, got = _levels(gpu, a, "rg8unorm", "linear", "weighted", "exact")
        assert report.precision == "integer"
        assert report.note.startswith(f"{gpu.name}: the single-pass integer mip chain failed its self-check "
                                      "(level 2 texel (0, 0): got [")
        assert report.note.endswith("); the integer chain was used")
        want = real(a.tolist(), 2, 8, False, True, mip_count(8, 4))
        for lv, (g, m) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"level {lv}"
    finally:
        gpu.cache("mip-spd").pop(key)


@pytest.mark.gpu
@pytest.mark.parametrize("adapter_type,round_a_level,forced,want", [
    ("DiscreteGPU", None, None, 3), ("IntegratedGPU", None, None, 3), ("CPU", None, None, None),
    ("CPU", True, None, 3), ("DiscreteGPU", False, None, None), ("DiscreteGPU", None, 6, 6), ("CPU", None, 2, 2)])
def test_first_pass_levels_follow_the_adapter(gpu, monkeypatch, adapter_type, round_a_level, forced, want):
    """Three levels in the first pass with the GPU forms (a GPU adapter, or ROUND_A_LEVEL forced),
    as many as the other passes (None) with the CPU adapters' forms; FIRST_PASS_LEVELS overrides."""
    import dataclasses

    monkeypatch.setattr(gpu, "info", dataclasses.replace(gpu.info, adapter_type=adapter_type))
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", round_a_level)
    monkeypatch.setattr(spd, "FIRST_PASS_LEVELS", forced)
    assert spd.first_pass_levels(gpu) == want
