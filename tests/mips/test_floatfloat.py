"""Box mips of float formats without float64 (``mip_ff.wgsl``, :mod:`gputex.mips.floatfloat`):
the arithmetic against exact rationals, the shader against its numpy model byte for byte, and
both against the float64 reference's rounding."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gputex
from gputex.mips import exact, generate_mips
from gputex.mips import floatfloat as ff

from reference import filter_levels

F32 = np.float32
floats = st.floats(min_value=-2.0 ** 100, max_value=2.0 ** 100, allow_nan=False, allow_infinity=False, width=32).filter(
    lambda v: v == 0 or abs(v) >= 1e-20)


def _q(x) -> Fraction:
    return Fraction(float(np.asarray(x).reshape(-1)[0]))


def _ffq(x) -> Fraction:
    return _q(x[0]) + _q(x[1])


def _one(v):
    return np.asarray([v], F32)


@settings(max_examples=400, deadline=None)
@given(floats, floats)
def test_two_sum_is_exact(a, b):
    s, e = ff.two_sum(_one(a), _one(b))
    assert _q(s[0]) + _q(e[0]) == _q(F32(a)) + _q(F32(b))
    assert s[0] == F32(a) + F32(b)


@settings(max_examples=400, deadline=None)
@given(floats)
def test_split_halves_have_12_bits_and_add_up(a):
    hi, lo = ff.split(_one(a))
    assert _q(hi[0]) + _q(lo[0]) == _q(F32(a))
    for part in (hi[0], lo[0]):
        if part != 0:
            m, _ = np.frexp(np.float64(part))
            assert (abs(m) * 2 ** 12) % 1 == 0, part  # at most 12 significant bits


@settings(max_examples=400, deadline=None)
@given(floats, floats)
def test_prod_is_the_exact_product_within_2_to_minus_46(a, b):
    a, b = F32(a), F32(b)
    exact = _q(a) * _q(b)
    if exact != 0 and not 1e-30 < abs(exact) < 1e38:
        return  # the low partial products, or the product, leave float32's normal range
    got = _ffq(ff.prod(_one(a), _one(b)))
    assert abs(got - exact) <= abs(exact) * Fraction(1, 2 ** 46)


@settings(max_examples=400, deadline=None)
@given(floats, floats, floats, floats)
def test_add_is_within_2_to_minus_45_of_the_magnitudes(a, b, c, d):
    x = ff.two_sum(_one(a), _one(b))  # normalized pairs
    y = ff.two_sum(_one(c), _one(d))
    got = _ffq(ff.add(x, y))
    exact = _ffq(x) + _ffq(y)
    assert abs(got - exact) <= (abs(_ffq(x)) + abs(_ffq(y))) * Fraction(1, 2 ** 45)


def _nearest(q: Fraction, half: bool) -> tuple[float, Fraction]:
    """The float32 (float16) nearest to q, ties to even, and q's distance to the nearest midpoint."""
    dt = np.float16 if half else F32
    with np.errstate(over="ignore"):  # (beyond the largest finite value: inf, whose neighbour is it)
        c = dt(float(q))  # within an ulp; fix it exactly
        best = None
        for cand in (np.nextafter(c, dt(-np.inf)), c, np.nextafter(c, dt(np.inf))):
            if not np.isfinite(cand):
                continue
            err = abs(_q(cand) - q)
            key = (err, int(np.asarray(cand).view(np.uint16 if half else np.uint32)) & 1)
            if best is None or key < best[0]:
                best = (key, cand)
        c = best[1]
        up, down = np.nextafter(c, dt(np.inf)), np.nextafter(c, dt(-np.inf))
    mids = [(_q(c) + _q(v)) / 2 for v in (up, down) if np.isfinite(v)]
    return float(c), min(abs(q - m) for m in mids)


@settings(max_examples=400, deadline=None)
@given(floats, floats, st.floats(min_value=2.0 ** -30, max_value=2.0 ** 30, width=32), st.booleans())
def test_round_quotient_is_the_float_nearest_to_the_rational(s0, s1, d, half):
    s = ff.two_sum(_one(s0), _one(F32(s1) * F32(2.0 ** -30)))
    den = ff.two_sum(_one(d), _one(F32(0)))
    q = _ffq(s) / _ffq(den)
    if half and abs(q) > 65504:
        return
    want, gap = _nearest(q, half)
    got = ff.round_quotient(s, den, half)[0]
    if gap > abs(q) * Fraction(1, 2 ** 40):  # the signs at the midpoints are sure there
        assert float(got) == want, (float(q), float(got), want)


def test_round_quotient_ties_go_to_the_even_float():
    # 1 + 2^-24 lies exactly between 1 and 1 + 2^-23 (odd): the even one, 1
    s = (np.asarray([1.0], F32), np.asarray([2.0 ** -24], F32))
    one = (np.asarray([1.0], F32), np.asarray([0.0], F32))
    assert ff.round_quotient(s, one, False)[0] == 1.0
    s = (np.asarray([1.0 + 2.0 ** -23], F32), np.asarray([2.0 ** -24], F32))  # between odd and even: up
    assert ff.round_quotient(s, one, False)[0] == F32(1.0 + 2.0 ** -22)
    s = (np.asarray([1.0 + 2.0 ** -11], F32), np.asarray([0.0], F32))  # float16: between 1 and 1 + 2^-10
    assert ff.round_quotient(s, one, True)[0] == 1.0
    s = (np.asarray([3.0 * 2.0 ** -25], F32), np.asarray([0.0], F32))  # between subnormals 2^-24 and 2^-23
    assert ff.round_quotient(s, one, True)[0] == F32(2.0 ** -23)


# --- the GPU path ---------------------------------------------------------------------------

CHANNELS = {"rgba32float": 4, "rg32float": 2, "r32float": 1, "rgba16float": 4, "rg16float": 2}


def _float_image(rng, w, h, c, half, kind):
    if kind == "unit":
        a = rng.random((h, w, c))
    else:  # colour signed, magnitudes over 2^-12 .. 2^12 (2^-6 .. 2^6 in float16)
        span = 6 if half else 12
        a = rng.choice([-1.0, 1.0], (h, w, c)) * 2.0 ** rng.uniform(-span, span, (h, w, c))
    if c > 1:  # alpha in [0, 1) (the reference clips alpha to [0, 1]), 30% of it 0
        a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, rng.random((h, w)))
    return a.astype(np.float16 if half else F32).astype(F32)


def _chain(gpu, a, fmt, alpha, monkeypatch, f64="0"):
    """Every level >= 1 of ``a``'s box chain in ``fmt``, precision ``exact``; ``f64="0"``: as on an
    adapter without shader-f64."""
    monkeypatch.setenv("GPUTEX_MIPS_F64", f64)
    tex = gputex.upload(gpu, gputex.from_array(a, "linear"), fmt, mips=True, alpha=alpha, precision="exact")
    try:
        return [gputex.capture(tex, lv).astype(F32).reshape(_shape(a, lv))
                for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


def _shape(a, level):
    h, w, c = a.shape
    return max(1, h >> level), max(1, w >> level), c


# (16, 16), (16, 2), (2, 16), (64, 32): levels 2.. from the level before (chain_plan's "tree")
MODEL_SIZES = [(7, 13), (13, 7), (16, 16), (31, 33), (1, 9), (5, 1), (3, 2), (16, 2), (2, 16), (64, 32)]


def test_chain_plan():
    # 4096^2 weighted: level 1's kept sums (2048^2 texels x 7 float-floats x 8 bytes = 235 MB) exceed
    # 128 MiB, level 2's (59 MB) do not: levels 1-2 from the base, 3.. from the level before
    assert ff.chain_plan(4096, 4096, 13, True) == [("base", False), ("base", True)] + [("tree", True)] * 9 + [
        ("tree", False)]
    # straight: 4 float-floats a texel, level 1's 2048^2 x 32 bytes are exactly 128 MiB: they fit
    assert ff.chain_plan(4096, 4096, 13, False)[:2] == [("base", True), ("tree", True)]
    assert ff.chain_plan(2048, 2048, 12, True)[:2] == [("base", True), ("tree", True)]
    # 16 x 2: (8, 1) (4, 1) (2, 1) (1, 1), each halving x, y staying 1
    assert ff.chain_plan(16, 2, 5, False) == [("base", True), ("tree", True), ("tree", True), ("tree", False)]
    # 1000 x 999: 999 is odd, no level's y weights are all 1
    assert all(how == ("base", False) for how in ff.chain_plan(1000, 999, 10, True))
    # 12 x 8: (6, 4) (3, 2) (1, 1): 12 % 1 == 0 but (3, 2) -> (1, 1) does not halve x
    assert ff.chain_plan(12, 8, 4, False) == [("base", True), ("tree", False), ("base", False)]


@pytest.mark.parametrize("fmt", sorted(CHANNELS))
@pytest.mark.parametrize("w,h", MODEL_SIZES)
@pytest.mark.parametrize("alpha", ["weighted", "straight", "premultiplied"])
def test_shader_equals_its_model_byte_for_byte(gpu, rng, monkeypatch, fmt, w, h, alpha):
    half = fmt.endswith("16float")
    for kind in ("unit", "signed"):
        a = _float_image(rng, w, h, CHANNELS[fmt], half, kind)
        got = _chain(gpu, a, fmt, alpha, monkeypatch)
        want = ff.model_levels(a, weighted=alpha == "weighted", half=half, loop_limit=exact.EXACT_LOOP_LIMIT)
        assert len(got) == len(want)
        for lv, (g, m) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g.view(np.uint32), m.view(np.uint32)), \
                f"{kind} level {lv}: {int((g != m).sum())} of {g.size} values differ"


@pytest.mark.parametrize("fmt", ["rgba32float", "rg16float"])
def test_footprints_in_chunks_equal_the_model(gpu, rng, monkeypatch, fmt):
    """Long footprints summed in chunks of rows and added up by ``finish`` (the limit lowered to
    16 texels, so a 31x33 base's levels 2.. take 2-17 chunks)."""
    monkeypatch.setattr(exact, "EXACT_LOOP_LIMIT", 16)
    half = fmt.endswith("16float")
    a = _float_image(rng, 31, 33, CHANNELS[fmt], half, "signed")
    got = _chain(gpu, a, fmt, "weighted", monkeypatch)
    want = ff.model_levels(a, weighted=True, half=half, loop_limit=exact.EXACT_LOOP_LIMIT)
    for lv, (g, m) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g.view(np.uint32), m.view(np.uint32)), f"level {lv}"
    # and the chunks change nothing but the order of the sums: the same values as one chunk
    monkeypatch.setattr(exact, "EXACT_LOOP_LIMIT", 1 << 30)
    whole = ff.model_levels(a, weighted=True, half=half, loop_limit=exact.EXACT_LOOP_LIMIT)
    assert sum(int((x != y).sum()) for x, y in zip(want, whole)) == 0


def _exact_level(a, dw, dh, weighted):
    """Level (dw, dh) of ``a`` as exact rationals, (dh, dw, 4) lists: the area average (with
    weighted alpha: colour by alpha where any alpha > 0, else the plain average; alpha the
    average of the positive alphas, as the float64 path), and each value's magnitude scale."""
    h, w, c = a.shape
    q = [[Fraction(float(v)) for v in row.reshape(-1)] for row in a.reshape(h, w * c)]
    out = []
    for y in range(dh):
        line = []
        for x in range(dw):
            acc, mag, clear, cmag = [Fraction(0)] * 4, [Fraction(0)] * 4, [Fraction(0)] * 3, [Fraction(0)] * 3
            wsum = 0
            for ty in range(y * h // dh, -(-(y + 1) * h // dh)):
                wy = min((ty + 1) * dh, (y + 1) * h) - max(ty * dh, y * h)
                for tx in range(x * w // dw, -(-(x + 1) * w // dw)):
                    wt = wy * (min((tx + 1) * dw, (x + 1) * w) - max(tx * dw, x * w))
                    t = q[ty][tx * c:(tx + 1) * c]
                    v = t * 4 if c == 1 else ([t[0]] * 3 + [t[1]] if c == 2 else t)
                    v = v[:3] + [Fraction(1) if c == 1 else v[3]]
                    if weighted and v[3] <= 0:
                        for i in range(3):
                            clear[i] += wt * v[i]
                            cmag[i] += wt * abs(v[i])
                    elif weighted:
                        for i in range(3):
                            acc[i] += wt * v[i] * v[3]
                            mag[i] += wt * abs(v[i]) * v[3]
                        acc[3] += wt * v[3]
                    else:
                        for i in range(4):
                            acc[i] += wt * v[i]
                            mag[i] += wt * abs(v[i])
                    wsum += wt
            if weighted and acc[3] > 0:
                vals = [acc[i] / acc[3] for i in range(3)] + [acc[3] / wsum]
                mags = [mag[i] / acc[3] for i in range(3)] + [acc[3] / wsum]
            elif weighted:
                vals = [(clear[i] + acc[i]) / wsum for i in range(3)] + [Fraction(0)]
                mags = [cmag[i] / wsum for i in range(3)] + [Fraction(0)]
            else:
                vals = [acc[i] / wsum for i in range(4)]
                mags = [mag[i] / wsum for i in range(4)]
            line.append((vals, mags))
        out.append(line)
    return out


@pytest.mark.parametrize("fmt", ["rgba32float", "rg16float", "r32float"])
@pytest.mark.parametrize("w,h", [(16, 16), (7, 13), (12, 5)])
@pytest.mark.parametrize("alpha", ["weighted", "straight"])
def test_exact_rationals_correctly_rounded(gpu, rng, monkeypatch, fmt, w, h, alpha):
    """Every value is the exact area average rounded to nearest, ties to even (2:1 axes put
    averages of float32 values exactly on midpoints), except within EPSILON of its magnitude
    scale of a midpoint (none here)."""
    half = fmt.endswith("16float")
    c = CHANNELS[fmt]
    pick = [0, 1, 2, 3] if c == 4 else ([0, 3] if c == 2 else [0])
    ties = 0
    for kind in ("unit", "signed"):
        a = _float_image(rng, w, h, c, half, kind)
        got = _chain(gpu, a, fmt, alpha, monkeypatch)
        for lv, g in enumerate(got, start=1):
            dh, dw = g.shape[:2]
            exact = _exact_level(a, dw, dh, alpha == "weighted" and c in (2, 4))
            for y in range(dh):
                for x in range(dw):
                    vals, mags = exact[y][x]
                    for k, i in enumerate(pick):
                        want, gap = _nearest(vals[i], half)
                        ties += gap == 0
                        if gap > ff.EPSILON * mags[i] or float(g[y, x, k]) != want:
                            assert float(g[y, x, k]) == want, (kind, lv, y, x, i, float(vals[i]))
    if (w, h) == (16, 16):
        assert ties > 0  # the tie rule was exercised


def _half_ulp_check(got, a, alpha, half):
    """Each value within half a unit in the last place of the float64 reference, plus EPSILON of
    the footprint's mean magnitude and the reference's own error (2^-40 of it: with signed
    values that cancel, float64 sums are off by more than a float32 ulp of a small result)."""
    c = a.shape[2]
    ref = filter_levels(a.astype(np.float64), c, srgb=False, alpha_mode=alpha)
    mag = filter_levels(np.abs(a).astype(np.float64), c, srgb=False, alpha_mode=alpha)
    dt = np.float16 if half else F32
    for lv, (g, r, m) in enumerate(zip(got, ref, mag), start=1):
        ulp = np.spacing(np.abs(r).astype(dt)).astype(np.float64)
        err = np.abs(g.astype(np.float64) - r)
        bound = 0.5 * ulp + (ff.EPSILON + 2.0 ** -40) * m
        assert (err <= bound).all(), f"level {lv}: {float((err / ulp).max()):.4f} ulp"


@pytest.mark.parametrize("fmt", sorted(CHANNELS))
@pytest.mark.parametrize("w,h", [(257, 131), (1000, 999), (64, 64), (255, 2)])
@pytest.mark.parametrize("alpha", ["weighted", "straight"])
def test_within_half_an_ulp_of_the_float64_reference(gpu, rng, monkeypatch, fmt, w, h, alpha):
    half = fmt.endswith("16float")
    for kind in ("unit", "signed"):
        a = _float_image(rng, w, h, CHANNELS[fmt], half, kind)
        _half_ulp_check(_chain(gpu, a, fmt, alpha, monkeypatch), a, alpha, half)


def test_which_path_runs(gpu, rng, monkeypatch):
    a = _float_image(rng, 9, 7, 4, False, "unit")
    f64 = gpu.has_feature("shader-f64")
    cases = [("rgba32float", "0", "linear", "exact", "float-float"),
             ("rgba16float", "1", "linear", "exact", "float-float"),
             ("rgba16float", "1", "linear", "fast", "float"),
             ("rgba32float", "0", "linear", "fast", "float"),
             ("rgba32float", "0", "linear", "float32", "float"),
             ("rgba32float", "0", "srgb", "exact", "float")]  # sRGB-tagged float data: no float-float transfer
    if f64:
        cases.append(("rgba32float", "1", "linear", "exact", "float64"))
    for fmt, allow, space, precision, want in cases:
        monkeypatch.setenv("GPUTEX_MIPS_F64", allow)
        tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=4)
        try:
            report = generate_mips(tex, precision=precision)
            assert report.precision == want and report.exact == (want != "float"), (fmt, allow, space, precision)
        finally:
            tex.destroy()
    # the levels' sources: 16 x 8 makes levels 2.. from the level before, 9 x 7 each from the base
    monkeypatch.setenv("GPUTEX_MIPS_F64", "0")
    for (w, h), want_sources in (((16, 8), [0, 1, 2, 3]), ((9, 7), [0, 0, 0])):
        tex = gputex.upload(gpu, gputex.from_array(_float_image(rng, w, h, 4, False, "unit"), "linear"),
                            "rgba32float", mips=True)
        try:
            assert generate_mips(tex).sources == want_sources
        finally:
            tex.destroy()


@pytest.mark.parametrize("w,h", [(257, 131), (64, 64)])
def test_same_bytes_as_the_float64_path(gpu, rng, monkeypatch, w, h):
    """Where the device has shader-f64, both paths round the exact average: on these images no
    value lies close enough to a midpoint for them to differ."""
    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    a = _float_image(rng, w, h, 4, False, "signed")
    ffl = _chain(gpu, a, "rgba32float", "weighted", monkeypatch, f64="0")
    f64 = _chain(gpu, a, "rgba32float", "weighted", monkeypatch, f64="1")
    for lv, (x, y) in enumerate(zip(ffl, f64), start=1):
        assert np.array_equal(x.view(np.uint32), y.view(np.uint32)), f"level {lv}"



def test_self_check_passes_here_and_a_disagreeing_adapter_gets_another_chain(gpu, rng, monkeypatch):
    """The self-check's images against the model on this adapter; a model off by one ulp in one
    value is caught; an adapter that fails the check gets the float32 chain, and the report says
    why."""
    from gputex.formats import get_format

    for fmt in ("rgba32float", "rg16float"):
        assert exact._ff_matches(gpu, get_format(fmt), "weighted") == (True, "")
    real = ff.model_levels

    def off(img, levels, **kw):
        out = real(img, levels, **kw)
        out[0][0, 0, 0] = np.nextafter(out[0][0, 0, 0], F32(np.inf))
        return out

    monkeypatch.setattr(ff, "model_levels", off)
    ok, why = exact._ff_matches(gpu, get_format("r32float"), "straight")
    assert not ok and why.startswith("16x8 level 1 texel (0, 0) channel 0: ")
    monkeypatch.setattr(exact, "ff_self_check", lambda session, fmt, alpha: (False, "level 1 differs"))
    a = _float_image(rng, 9, 7, 4, False, "unit")
    monkeypatch.setenv("GPUTEX_MIPS_F64", "0")  # (float-float serves only where float64 does not)
    tex = gputex.upload(gpu, gputex.from_array(a, "linear"), "rgba32float", mips=4)
    try:
        report = generate_mips(tex)
    finally:
        tex.destroy()
    assert report.precision == "float" and not report.exact
    assert report.note == (f"{gpu.name}: the float-float mip chain failed its self-check (level 1 differs); "
                           "the float32 chain was used")
