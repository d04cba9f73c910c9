"""The cell chain (gputex/mips/cells.py, gputex/mips/odd.py, mip_odd.wgsl): the default exact box chain of
sizes whose levels do not halve. Its grid arithmetic against the footprint weights summed directly;
its bytes equal the Python model's (intbox.model_chain) and the multi-pass integer chain's
(``precision="int"``), and every level is the float64 reference's rounding (tests/reference.py;
tolerance 0 except within intbox.EPSILON_LSB of a tie), for every kind of source (the base, a
grid from the base, grids from grids), alpha mode, 8 and 16 bits, sRGB and linear; its
self-check's fallback."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels, assert_correctly_rounded

from gputex.layout import mip_count
from gputex.mips.cells import cell_plan, cut_points, model_cells
from gputex.mips.intbox import model_chain
from gputex.mips.odd import first_grid

from reference import filter_levels

ODD_SIZES = [(1, 9), (9, 1), (3, 5), (7, 13), (45, 35), (61, 37), (257, 131), (1000, 999)]
FORMATS = [("rgba8unorm-srgb", 4, 8, "srgb"), ("bgra8unorm", 4, 8, "linear"), ("rg8unorm", 2, 8, "linear"),
           ("r8unorm", 1, 8, "srgb"), ("rgba16unorm", 4, 16, "srgb"), ("rg16unorm", 2, 16, "linear"),
           ("r16unorm", 1, 16, "linear")]


def _footprint_sums(v: np.ndarray, lv: int) -> np.ndarray:
    """Level ``lv``'s exact integer sums from the base footprints, each overlap computed with
    fractions of a texel (independent of the grids): weight = overlap * level width * height."""
    from fractions import Fraction

    h, w = v.shape
    dw, dh = max(1, w >> lv), max(1, h >> lv)

    def axis(n, m, j):
        lo, hi = Fraction(j * n, m), Fraction((j + 1) * n, m)
        return [(t, (min(t + 1, hi) - max(t, lo)) * m) for t in range(int(lo), -(-(j + 1) * n // m))]

    out = np.zeros((dh, dw), object)
    for y in range(dh):
        for x in range(dw):
            s = sum(wy * wx * int(v[ty, tx]) for ty, wy in axis(h, dh, y) for tx, wx in axis(w, dw, x))
            assert s.denominator == 1
            out[y, x] = int(s)
    return out


def test_cut_points_are_the_edges_and_one_past():
    assert cut_points(7, 3).tolist() == [0, 1, 2, 3, 4, 5, 7]  # edges 0, 2, 4, 7
    assert cut_points(8191, 4095)[:6].tolist() == [0, 1, 2, 3, 4, 5]
    assert cut_points(5, 1).tolist() == [0, 1, 5]


@pytest.mark.parametrize("w,h", [(1, 9), (9, 1), (2, 3), (3, 5), (7, 13), (45, 35), (61, 37), (130, 67)])
@pytest.mark.parametrize("first", [1, 2, 3, 5])
def test_grid_sums_equal_the_footprint_sums(w, h, first):
    rng = np.random.default_rng(2000 + w * 7 + h + first)
    v = rng.integers(0, 1 << 20, (h, w))
    plan = cell_plan(w, h, mip_count(w, h), 48, 1 << 30, first)
    got = model_cells(v, plan)
    assert len(got) == mip_count(w, h) - 1
    for lv, g in enumerate(got, start=1):
        assert (g == _footprint_sums(v, lv)).all(), f"{w}x{h} first {first} level {lv}"


def test_plan_grids_shrink_a_quarter_a_level_and_fit_the_binding():
    plan = cell_plan(8191, 8191, 13, 48, 1 << 30)
    assert plan.sources() == [0, 0] + list(range(3, 13))
    grids = [s for s in plan.steps if s.kind == "cells"]
    assert [(g.level, g.source) for g in grids] == [(3, 0)] + [(k, k - 1) for k in range(4, 13)]
    assert grids[0].size == (3394, 3394)  # ~16 cells a texel of level 3 (1023^2)
    for a, b in zip(grids, grids[1:]):
        assert b.size[0] * b.size[1] * 3 < a.size[0] * a.size[1]
    small = cell_plan(8191, 8191, 13, 48, 1836 * 1836 * 48)  # G(3) does not fit: G(4) first
    assert small.sources() == [0, 0, 0] + list(range(4, 13))


@pytest.mark.gpu
@pytest.mark.parametrize("w,h", ODD_SIZES)
@pytest.mark.parametrize("space,alpha", [("srgb", "weighted"), ("srgb", "straight"), ("linear", "weighted"),
                                         ("linear", "premultiplied")])
def test_rgba8_equals_the_integer_chain_and_the_reference(gpu, w, h, space, alpha):
    rng = np.random.default_rng(2100 + w * 11 + h)
    fmt = "rgba8unorm-srgb" if space == "srgb" else "rgba8unorm"
    for alpha_kind in ("opaque", "holes"):
        a = _image(rng, w, h, 4, 8, alpha_kind)
        report, got = _levels(gpu, a, fmt, space, alpha, "exact")
        ref_report, want = _levels(gpu, a, fmt, space, alpha, "int")
        assert report.precision == ref_report.precision == "integer" and report.note == ""
        assert report.sources == cell_plan(w, h, mip_count(w, h), 48, 1 << 30, first_grid(gpu)).sources()
        ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=alpha)
        for lv, (g, i, r) in enumerate(zip(got, want, ref), start=1):
            what = f"{w}x{h} {space} {alpha} {alpha_kind} level {lv}"
            assert np.array_equal(g, i), f"{what}: differs from the integer chain"
            assert_correctly_rounded(g, r, 255, what)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", FORMATS)
@pytest.mark.parametrize("first", [1, 3])
def test_formats_and_sources_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space, first):
    """Every format, from grids from level 1 on (every level from a grid) or from level 3."""
    import gputex.mips.cells as cells
    import gputex.mips.odd as odd

    monkeypatch.setattr(cells, "FIRST_GRID", first)
    monkeypatch.setattr(odd, "FIRST", first)
    w, h = 61, 37
    rng = np.random.default_rng(2200 + channels * 3 + bits + first)
    a = _image(rng, w, h, channels, bits, "holes")
    for alpha in ("weighted", "straight"):
        report, got = _levels(gpu, a, fmt, space, alpha, "exact")
        assert report.precision == "integer" and report.note == ""
        assert report.sources == [k if k >= first else 0 for k in range(1, mip_count(w, h))]
        want = model_chain(a.tolist(), channels, bits, space == "srgb", alpha == "weighted", mip_count(w, h))
        top = (1 << bits) - 1
        ref = filter_levels(a / top, channels, srgb=space == "srgb", alpha_mode=alpha)
        for lv, (g, m, r) in enumerate(zip(got, want, ref), start=1):
            what = f"{fmt} {alpha} level {lv}"
            assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{what}: != model"
            assert_correctly_rounded(g.reshape(r.shape), r, top, what)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", [("bgra8unorm-srgb", 4, 8, "srgb"), ("rgba16unorm", 4, 16, "srgb"),
                                                     ("rg8unorm", 2, 8, "linear"), ("r16unorm", 1, 16, "linear")])
def test_texture_loads_and_exact_search_give_the_same_bytes(gpu, monkeypatch, fmt, channels, bits, space):
    """The base read with textureLoad instead of from a copy of its bytes, its runs summed in
    96-bit sums instead of 32-bit lanes, grid sums in 3 words a slot instead of 2, and every code from the exact search instead of the
    float screen: the same bytes."""
    import gputex.mips.odd as odd

    a = _image(np.random.default_rng(2250 + channels + bits), 130, 67, channels, bits, "holes")
    _, fast = _levels(gpu, a, fmt, space, "weighted", "exact")
    monkeypatch.setattr(odd, "BASE_COPY", False)
    monkeypatch.setattr(odd, "SCREEN", False)
    monkeypatch.setattr(odd, "NARROW", False)
    monkeypatch.setattr(odd, "TWO_WORDS", False)
    report, plain = _levels(gpu, a, fmt, space, "weighted", "exact")
    assert report.precision == "integer" and report.note == ""
    for lv, (f, p) in enumerate(zip(fast, plain), start=1):
        assert np.array_equal(f, p), f"level {lv}"


@pytest.mark.gpu
def test_banded_levels_give_the_same_bytes(gpu, monkeypatch):
    """A level written in bands of rows (a small binding limit) gives the bytes of one dispatch."""
    import gputex.mips.odd as odd

    a = _image(np.random.default_rng(2300), 257, 131, 4, 8, "holes")
    _, plain = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    monkeypatch.setattr(odd, "_limit", lambda session: 2048)  # 4 rows of 512 bytes; G(first) deeper
    report, banded = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    assert report.sources[:4] == [0, 0, 0, 0]
    for lv, (p, b) in enumerate(zip(plain, banded), start=1):
        assert np.array_equal(p, b), f"level {lv}"


@pytest.mark.gpu
def test_failed_self_check_falls_back_to_the_integer_chain(gpu, monkeypatch):
    import gputex.mips.intbox as intbox
    import gputex.mips.integer as integer
    from gputex.mips.odd import CHECK_SIZE

    key = ("mip-odd-self-check", "rg8unorm", "linear", True)
    gpu.cache("mip-odd").pop(key)
    real = intbox.model_chain
    expected = integer.expected_levels

    def wrong(codes, *args):  # an adapter that disagrees (only for the cell chain's check image)
        levels = expected(codes, *args)
        if codes.shape[0] == CHECK_SIZE[1]:
            levels[2][0, 0] ^= 1
        return levels

    monkeypatch.setattr(integer, "expected_levels", wrong)
    try:
        a = _image(np.random.default_rng(2400), 9, 5, 2, 8, "holes")
        report, got = _levels(gpu, a, "rg8unorm", "linear", "weighted", "exact")
        assert report.precision == "integer"
        assert report.note.startswith(f"{gpu.name}: the cell mip chain failed its self-check "
                                      "(level 3 texel (0, 0): got [")
        assert report.note.endswith("); the integer chain was used")
        want = real(a.tolist(), 2, 8, False, True, mip_count(9, 5))
        for lv, (g, m) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"level {lv}"
    finally:
        gpu.cache("mip-odd").pop(key)
