"""The cell chain's levels from the base by float sums (mip_odd.wgsl ``level_fast``) and the exact
pass for the texels it leaves (``level_fix``): the float32 error bound they rest on, checked in
numpy float32 against exact rationals (no GPU), and on the GPU the bytes of intbox.model_chain
with every texel sent to the exact pass, in one dispatch and in bands."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_mips_int import _image
from test_mips_odd import _levels

from gputex.layout import mip_count
from gputex.mips.cells import cell_plan
from gputex.mips.intbox import lin_table, model_chain, round_code, threshold_table

U = Fraction(1, 1 << 24)
MARGIN = Fraction(1, 1 << 18)  # mip_screen.wgsl
F32 = np.float32


def _gamma(n: int) -> Fraction:
    return n * U / (1 - n * U)


def _decides(g_num: Fraction, g_den: Fraction) -> bool:
    """screen_code's comparisons (num against threshold * (1 +- MARGIN) * den: three correctly
    rounded products) are exact for sums within g_num, g_den of theirs."""
    return ((1 - U) ** 3 * (1 + MARGIN) * (1 - g_den) >= 1 + g_num
            and (1 + U) ** 3 * (1 - MARGIN) * (1 + g_den) <= 1 - g_num)


def test_span_limit_keeps_the_estimate_inside_the_margin():
    """odd.FAST_SPAN, GRID_SPAN: the float sums from the base (colour Fx + Fy + 5 roundings, alpha
    Fx + Fy + 2) and from a grid (both Fx + Fy + 6) stay where the screen's decisions are exact."""
    from gputex.mips.odd import FAST_SPAN, GRID_SPAN

    assert _decides(_gamma(FAST_SPAN + 5), _gamma(FAST_SPAN + 2))
    assert _decides(_gamma(GRID_SPAN + 6), _gamma(GRID_SPAN + 6))
    assert not _decides(_gamma(FAST_SPAN + 9), _gamma(FAST_SPAN + 6))  # a looser limit would not hold


def _texel_float(texels, wx, wy, bits, srgb, weighted, mutant=False):
    """level_fast's float32 arithmetic, in the shader's order, for colour channel 0: the float
    numerator and denominator, the exact ones."""
    lin = lin_table(bits, srgb)
    s_c, s_a = F32(0), F32(0)
    alpha = sum(wy[j] * wx[i] * a for j, row in enumerate(texels) for i, (_, a) in enumerate(row))
    covered = weighted and alpha > 0
    for j, row in enumerate(texels):
        r_c, r_a = F32(0), F32(0)
        for i, (c, a) in enumerate(row):
            lf = F32(lin[c] >> 32) * F32(4294967296.0) + F32(lin[c] & 0xFFFFFFFF)
            if mutant and i == j == 0:
                lf = lf * F32(1 + 2.0 ** -14)
            r_c = r_c + lf * (F32(a) if covered else F32(1)) * F32(wx[i])
            r_a = r_a + F32(a) * F32(wx[i])
        s_c = s_c + r_c * F32(wy[j])
        s_a = s_a + r_a * F32(wy[j])
    total = sum(wx) * sum(wy)
    num = sum(wy[j] * wx[i] * lin[c] * (a if covered else 1) for j, row in enumerate(texels) for i, (c, a) in enumerate(row))
    den = alpha if covered else total
    return s_c, (s_a if covered else F32(total)), num, den


def _case(bits):
    top = (1 << bits) - 1
    code = st.integers(0, top)
    return st.integers(1, 12).flatmap(lambda fx: st.integers(1, 12).flatmap(lambda fy: st.tuples(
        st.lists(st.lists(st.tuples(code, code), min_size=fx, max_size=fx), min_size=fy, max_size=fy),
        st.lists(st.integers(1, 0xFFFF), min_size=fx, max_size=fx),
        st.lists(st.integers(1, 0xFFFF), min_size=fy, max_size=fy))))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([8, 16]).flatmap(lambda b: st.tuples(st.just(b), _case(b))), st.booleans(), st.booleans())
def test_float_sums_are_within_their_bound(case, srgb, weighted):
    bits, (texels, wx, wy) = case
    n, d, num, den = _texel_float(texels, wx, wy, bits, srgb, weighted)
    f = len(wx) + len(wy)
    assert abs(Fraction(float(n)) - num) <= _gamma(f + 5) * num
    assert abs(Fraction(float(d)) - den) <= _gamma(f + 2) * den


def _approx(v: int) -> np.float32:
    """mip_intmath.wgsl approx() of a sum's words (w, z, y, x), float32."""
    w = [F32((v >> (32 * k)) & 0xFFFFFFFF) for k in range(4)]
    return ((w[3] * F32(4294967296.0) + w[2]) * F32(4294967296.0) + w[1]) * F32(4294967296.0) + w[0]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10).flatmap(lambda fx: st.integers(1, 11).flatmap(lambda fy: st.tuples(
    st.lists(st.lists(st.tuples(st.integers(0, (1 << 96) - 1), st.integers(1, (1 << 64) - 1)),
                      min_size=fx, max_size=fx), min_size=fy, max_size=fy),
    st.lists(st.integers(1, 0xFFFF), min_size=fx, max_size=fx),
    st.lists(st.integers(1, 0xFFFF), min_size=fy, max_size=fy)))))
def test_grid_float_sums_are_within_their_bound(case):
    """level_fast from a grid: cells' (colour, alpha) sums by approx(), weighted and added as from
    the base; each sum within gamma(Fx + Fy + 6)."""
    cells, wx, wy = case
    most = (1 << 96) // (sum(wx) * sum(wy))  # a texel's sums are below 2^96 (intbox.MAX_BASE_TEXELS)
    cells = [[(c % most, a % most or 1) for c, a in row] for row in cells]
    s_c, s_a = F32(0), F32(0)
    for j, row in enumerate(cells):
        r_c, r_a = F32(0), F32(0)
        for i, (c, a) in enumerate(row):
            r_c = r_c + _approx(c) * F32(wx[i])
            r_a = r_a + _approx(a) * F32(wx[i])
        s_c = s_c + r_c * F32(wy[j])
        s_a = s_a + r_a * F32(wy[j])
    num = sum(wy[j] * wx[i] * c for j, row in enumerate(cells) for i, (c, _) in enumerate(row))
    den = sum(wy[j] * wx[i] * a for j, row in enumerate(cells) for i, (_, a) in enumerate(row))
    f = len(wx) + len(wy)
    assert abs(Fraction(float(s_c)) - num) <= _gamma(f + 6) * num
    assert abs(Fraction(float(s_a)) - den) <= _gamma(f + 6) * den


def test_a_mutant_estimate_breaks_the_bound():
    n, _, num, _ = _texel_float([[(200, 255)]], [1], [1], 8, True, True, mutant=True)
    assert abs(Fraction(float(n)) - num) > _gamma(2 + 5) * num


def _screen(n, d, bits, srgb):
    """mip_odd.wgsl screen_code (float32): the code, or None where the screen is unsure."""
    top = (1 << bits) - 1
    if srgb:
        q = np.array([float(t) / 2.0 ** 32 for t in threshold_table(bits, True)] + [3.4e38]).astype(F32)
    else:
        q = np.array([0.0] + [k - 0.5 for k in range(1, top + 2)]).astype(F32)
    v = float(n / d)
    if srgb:
        v /= 2.0 ** (31 if bits == 8 else 40)
        v = (v * 12.92 if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055) * top
    k = int(min(max(np.floor(v + 0.5), 0), top))
    above = k == 0 or n >= q[k] * (F32(1) + F32(MARGIN)) * d
    below = k == top or n < q[k + 1] * (F32(1) - F32(MARGIN)) * d
    return k if above and below else None


def _near(code: int, n: int, delta: int, srgb: bool):
    """Two texels, codes code - 1 and code, weighted A and B (A + B = n) so the value sits as
    close to the threshold between them as the weights allow (B moved by delta)."""
    lin, q = lin_table(8, srgb), threshold_table(8, srgb)
    f = (Fraction(q[code], 1 << 32) - lin[code - 1]) / (lin[code] - lin[code - 1])
    b = min(max(round(f * n) + delta, 1), n - 1)
    return _texel_float([[(code - 1, 255), (code, 255)]], [n - b, b], [1], 8, srgb, True)


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 255), st.integers(1 << 10, 0xFFFF), st.integers(-3, 3), st.booleans())
def test_near_threshold_values_are_accepted_only_when_exact(code, n, delta, srgb):
    nf, df, num, den = _near(code, n, delta, srgb)
    k = _screen(nf, df, 8, srgb)
    if k is not None:
        assert k == round_code(num, den, 8, srgb)


def test_the_screen_leaves_values_next_to_a_threshold():
    """(So the test above reaches the refusals.)"""
    left = [c for c in range(1, 256) if _screen(*_near(c, 0xFFFF, 0, True)[:2], 8, True) is None]
    assert len(left) > 200


def test_fast_levels_are_the_base_levels_within_the_span():
    import gputex.mips.odd as odd

    plan = cell_plan(2047, 2047, 11, 48, 1 << 30)
    levels = [s for s in plan.steps if s.kind == "level"]
    assert all(odd._fast(plan, s) for s in levels)  # levels 1-2 from the base, 3.. from grids
    assert max(odd._run(plan, s) + odd._span(plan, s) for s in levels[2:]) <= odd.GRID_SPAN
    deep = cell_plan(2047, 2047, 11, 48, 1 << 30, 6)  # levels 1-5 from the base
    spans = [odd._run(deep, s) + odd._span(deep, s) for s in deep.steps if s.kind == "level"][:5]
    assert [odd._fast(deep, s) for s in deep.steps if s.kind == "level"][:5] == [n <= odd.FAST_SPAN for n in spans]
    assert spans[3] > odd.FAST_SPAN  # level 4 (17 columns and rows) by the exact sums


FORMATS = [("rgba8unorm-srgb", 4, 8, "srgb"), ("bgra8unorm", 4, 8, "linear"), ("rg8unorm", 2, 8, "linear"),
           ("r8unorm", 1, 8, "srgb"), ("rgba16unorm", 4, 16, "srgb"), ("r16unorm", 1, 16, "linear")]


def _set(monkeypatch, module, **flags) -> None:
    """Each flag of ``module`` set for the test."""
    for name, value in flags.items():
        monkeypatch.setattr(module, name, value)


def _assert_model(gpu, a, fmt, space, channels, bits, sources=None) -> None:
    """Every level of ``a``'s exact chain, weighted and straight alpha, equals ``model_chain``'s
    (and its report's ``sources`` are ``sources``, where given)."""
    h, w = a.shape[:2]
    for alpha in ("weighted", "straight"):
        report, got = _levels(gpu, a, fmt, space, alpha, "exact")
        assert report.precision == "integer" and report.note == ""
        if sources is not None:
            assert report.sources == sources
        want = model_chain(a.tolist(), channels, bits, space == "srgb", alpha == "weighted", mip_count(w, h))
        for lv, (g, m) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{fmt} {alpha} level {lv}"


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", FORMATS)
@pytest.mark.parametrize("miss_all,first,pairs", [(False, 3, True), (False, 3, False), (True, 3, True), (True, 1, True)])
def test_fast_levels_and_the_exact_pass_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space, miss_all,
                                                        first, pairs):
    """Every texel of the levels (from the base, two texels a thread or one; and from grids;
    every level from a grid where the first grid is G(1)) from the float screen where it decides
    (False) or from the exact pass (True): the model's bytes."""
    import gputex.mips.cells as cells
    import gputex.mips.odd as odd

    # SORTED: cells in order of width, or in place
    _set(monkeypatch, odd, MISS_ALL=miss_all, PAIRS=pairs, SORTED=pairs, FIRST=first, INLINE_FIX=False, FUSE=False)
    monkeypatch.setattr(cells, "FIRST_GRID", first)
    w, h = 61, 37
    a = _image(np.random.default_rng(2500 + channels * 3 + bits), w, h, channels, bits, "holes")
    _assert_model(gpu, a, fmt, space, channels, bits)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", FORMATS)
@pytest.mark.parametrize("miss_all,first,wide", [(False, 4, True), (True, 3, False)])
def test_inline_exact_texels_and_fused_steps_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space,
                                                             miss_all, first, wide):
    """The chain as on a GPU (odd.INLINE_FIX: a texel the screen leaves made in the fast pass;
    odd.FUSE: a level and the next grid in one dispatch, level 3 from the base by quads with
    G(4) where the first grid is 4): the model's bytes, from the screen or, every texel, from the
    inline exact sums; a grid's cells by workgroups of 64 x 1 or 8 x 8 (odd.CELLS_WIDE), from the
    base in one sweep or the plain colour in a second (odd.ONE_SWEEP)."""
    import gputex.mips.odd as odd

    # SEPARATE: a buffer a level, or one for all
    _set(monkeypatch, odd, CELLS_WIDE=wide, SEPARATE=wide, ONE_SWEEP=not wide, MISS_ALL=miss_all, INLINE_FIX=True,
         FUSE=True, SORTED=False, FIRST=first)
    w, h = 61, 37
    a = _image(np.random.default_rng(2550 + channels * 3 + bits), w, h, channels, bits, "holes")
    jobs = odd._schedule(cell_plan(w, h, mip_count(w, h), 48, 1 << 30, first), {}, lambda st: (0, st.size[1]),
                         lambda st: True)
    assert [j[0] for j in jobs] == (["level", "level", "step", "step", "level"] if first == 4 else
                                    ["level", "step", "step", "step", "level"])
    _assert_model(gpu, a, fmt, space, channels, bits, [k if k >= first else 0 for k in range(1, mip_count(w, h))])


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", FORMATS)
@pytest.mark.parametrize("miss_all,first,texels,tail_from", [(False, 4, 4096, 4), (True, 1, 1 << 20, 1),
                                                             (False, 1, 40, 3), (True, 3, 4096, 3)])
def test_small_levels_in_one_workgroup_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space, miss_all,
                                                       first, texels, tail_from):
    """odd.TAIL: every level from the first read from a grid with at most odd.TAIL_TEXELS texels
    on, and the grids between them, made by one workgroup in one dispatch (every level from a grid
    where the first grid is G(1); its codes from the screen or, every texel, from the inline exact
    sums): the model's bytes."""
    import gputex.mips.cells as cells
    import gputex.mips.odd as odd

    _set(monkeypatch, odd, TAIL=True, TAIL_TEXELS=texels, MISS_ALL=miss_all, FIRST=first, INLINE_FIX=True, FUSE=True,
         SORTED=False)
    monkeypatch.setattr(cells, "FIRST_GRID", first)
    w, h = 61, 37
    plan = cell_plan(w, h, mip_count(w, h), 48, 1 << 30, first)
    start = odd._tail_start(plan)
    assert start is not None and plan.steps[start].level == tail_from
    jobs = odd._schedule(plan, {}, lambda st: (0, st.size[1]), lambda st: True, start)
    assert jobs[-1] == ("tail", start) and all(j[1].level < tail_from or j[0] == "cells" for j in jobs[:-1])
    a = _image(np.random.default_rng(2560 + channels * 3 + bits + first), w, h, channels, bits, "holes")
    _assert_model(gpu, a, fmt, space, channels, bits)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", [FORMATS[0], FORMATS[3], FORMATS[4]])
@pytest.mark.parametrize("miss_all", [False, True])
def test_a_buffer_and_a_list_a_level_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space, miss_all):
    """The big levels' form on a GPU: a buffer and a miss list a level (odd.SEPARATE; the lists
    emptied up front, a level's copy issued after the next pass), the exact pass a dispatch of its
    own, G(4) from the base with the plain colour in a second sweep: the model's bytes."""
    import gputex.mips.odd as odd

    _set(monkeypatch, odd, SEPARATE=True, FIX_WIDE=True, INLINE_FIX=False, FUSE=False, MISS_ALL=miss_all, FIRST=4,
         ONE_SWEEP=False, CELLS_WIDE=True)
    w, h = 67, 41
    a = _image(np.random.default_rng(2580 + channels * 3 + bits), w, h, channels, bits, "holes")
    want = model_chain(a.tolist(), channels, bits, space == "srgb", True, mip_count(w, h))
    report, got = _levels(gpu, a, fmt, space, "weighted", "exact")
    assert report.sources == [k if k >= 4 else 0 for k in range(1, mip_count(w, h))]
    for lv, (g, m) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{fmt} level {lv}"


@pytest.mark.gpu
@pytest.mark.parametrize("separate", [False, True])
def test_exact_pass_in_bands_gives_the_same_bytes(gpu, monkeypatch, separate):
    """Every texel to the exact pass, the levels in bands of a few rows (the miss list emptied
    for each band; or a list a band and a buffer a level of one band, odd.SEPARATE): the bytes
    of the plain chain."""
    import gputex.mips.odd as odd

    monkeypatch.setattr(odd, "SEPARATE", separate)
    monkeypatch.setattr(odd, "FIX_WIDE", separate)  # (the exact pass a workgroup a texel, or an invocation)
    monkeypatch.setattr(odd, "INLINE_FIX", False)
    a = _image(np.random.default_rng(2600), 257, 131, 4, 8, "holes")
    monkeypatch.setattr(odd, "FAST_LEVELS", False)
    _, plain = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    monkeypatch.setattr(odd, "FAST_LEVELS", True)
    monkeypatch.setattr(odd, "MISS_ALL", True)
    monkeypatch.setattr(odd, "_limit", lambda session: 2048)
    report, banded = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    assert report.sources[:2] == [0, 0]
    for lv, (p, b) in enumerate(zip(plain, banded), start=1):
        assert np.array_equal(p, b), f"level {lv}"


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,space", [("rgba8unorm-srgb", "srgb"), ("r8unorm", "srgb")])
def test_tables_in_workgroup_memory_or_not_give_the_model(gpu, monkeypatch, fmt, space):
    """odd.SMEM_TABLES and odd.SORTED as on a GPU (tables in workgroup memory, cells in place) and
    as on a CPU adapter: the model's bytes."""
    import gputex.mips.odd as odd

    channels = 4 if fmt.startswith("rgba") else 1
    a = _image(np.random.default_rng(2700 + channels), 130, 67, channels, 8, "holes")
    want = model_chain(a.tolist(), channels, 8, True, True, mip_count(130, 67))
    for smem in (True, False):
        monkeypatch.setattr(odd, "SMEM_TABLES", smem)
        monkeypatch.setattr(odd, "SORTED", not smem)
        _, got = _levels(gpu, a, fmt, space, "weighted", "exact")
        for lv, (g, m) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"smem {smem} level {lv}"
