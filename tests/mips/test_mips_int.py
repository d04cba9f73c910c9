"""The integer box chain (gputex/mips/integer.py, gputex/mips/intbox.py): every 8- and 16-bit level equals the float64
reference's rounding (tests/reference.py), tolerance 0, except within intbox.EPSILON_LSB of a tie;
its tables against float64; the self-check and its fallback."""

from __future__ import annotations

import numpy as np
import pytest

import gputex
from gputex.layout import mip_count
from gputex.mips.intbox import (
    EPSILON_LSB,
    LOOP_LIMIT,
    frac_bits,
    lin_table,
    model_chain,
    plan_chain,
    round_code,
    threshold_table,
)

from reference import filter_levels, srgb_to_linear

SIZES = [(1, 1), (1, 9), (9, 1), (2, 3), (5, 5), (7, 13), (255, 2), (257, 131), (1000, 999), (64, 64), (256, 128)]


def assert_correctly_rounded(got: np.ndarray, ref: np.ndarray, top: int, what: str) -> int:
    """``got`` is round-to-nearest of ``ref * top`` wherever that is more than EPSILON_LSB (plus
    the float64 reference's own noise) from a tie; at a tie either neighbour. Returns the number
    of texels in the tie zone."""
    x = np.clip(ref, 0, 1) * top
    want = np.floor(x + 0.5)
    tie = np.abs(x - np.floor(x) - 0.5) <= EPSILON_LSB + 1e-9
    g = got.astype(np.float64)
    bad = (g != want) & ~(tie & (np.abs(g - x) <= 0.5 + EPSILON_LSB + 1e-9))
    assert g.shape == x.shape, f"{what}: shape {g.shape} vs {x.shape}"
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} texels not correctly rounded, first at {i}: "
                             f"got {g[i]:.0f}, exact {x[i]:.9f}")
    return int(tie.sum())


def _image(rng, w, h, channels, bits, alpha_kind):
    a = rng.integers(0, 1 << bits, (h, w, channels), np.uint8 if bits == 8 else np.uint16)
    if channels in (2, 4):
        if alpha_kind == "opaque":
            a[..., -1] = (1 << bits) - 1
        else:  # transparent texels and a fully transparent block, colour hidden under them
            a[..., -1] = np.where(rng.random((h, w)) < 0.4, 0, a[..., -1])
            a[: h // 2, : w // 2, -1] = 0
    return a


def _levels(gpu, a, fmt, space, alpha, precision):
    """(MipReport, levels 1..) of ``a`` uploaded as ``fmt`` and mipped at ``precision``."""
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, precision="fast")
    try:
        report = gputex.generate_mips(tex, alpha=alpha, precision=precision)
        return report, [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


def _run(gpu, a, fmt, space, **mip):
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, **mip)
    try:
        return [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


# -- pure arithmetic ---------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [8, 16])
def test_lin_table_is_the_rounded_decode(bits):
    top = (1 << bits) - 1
    c = np.arange(top + 1)
    exact = srgb_to_linear(c / top) * 2.0 ** frac_bits(bits)
    lin = np.array(lin_table(bits, True), np.float64)
    # half a unit, + float64's own error at 2^F (~1e-4 units)
    assert np.abs(lin - exact).max() <= 0.5 + 1e-3
    assert lin_table(bits, False) == tuple(range(top + 1))
    assert lin[0] == 0 and lin[-1] == 2 ** frac_bits(bits) and max(lin_table(8, True)) < 2 ** 32


@pytest.mark.parametrize("bits", [8, 16])
def test_thresholds_are_the_midpoints_between_codes(bits):
    top = (1 << bits) - 1
    k = np.arange(1, top + 1)
    q = np.array(threshold_table(bits, True)[1:], np.float64) / 2.0 ** (frac_bits(bits) + 32)
    assert np.abs(q - srgb_to_linear((k - 0.5) / top)).max() <= 1e-15
    assert all(a < b for a, b in zip(threshold_table(bits, True), threshold_table(bits, True)[1:]))
    lin = threshold_table(bits, False)
    assert lin[1] == 1 << 31 and lin[top] == (2 * top - 1) << 31


def test_round_code_at_and_around_the_thresholds():
    # linear 8-bit: num / den in code units; exact ties round up
    assert round_code(5, 2, 8, False) == 3  # 2.5
    assert round_code(49, 20, 8, False) == 2  # 2.45
    assert round_code(255 * 7, 7, 8, False) == 255
    assert round_code(0, 9, 8, False) == 0
    # sRGB: the code whose encode interval holds the value
    for code in (0, 1, 17, 128, 254, 255):
        v = lin_table(8, True)[code]
        assert round_code(v, 1, 8, True) == code


def test_plan_sources_tile_and_respect_the_limits():
    for w, h in [(8192, 8192), (8191, 8191), (4095, 4097), (1000, 999), (20, 20), (257, 131), (1, 9)]:
        levels = mip_count(w, h)
        plan = plan_chain(w, h, levels, 48, 128 << 20)
        assert [p.level for p in plan] == list(range(1, levels))
        for p in plan:
            dw, dh = max(1, w >> p.level), max(1, h >> p.level)
            if p.source:
                sw, sh = max(1, w >> p.source), max(1, h >> p.source)
                assert 2 <= p.source < p.level and sw % dw == 0 and sh % dh == 0
                assert plan[p.source - 1].store and sw * sh * 48 <= 128 << 20
                assert (sw // dw) * (sh // dh) <= LOOP_LIMIT
            else:
                fw = -(-w // dw) + 1
                assert fw * p.chunk_rows <= max(LOOP_LIMIT, fw) and p.chunks * p.chunk_rows >= -(-h // dh) + 1
    # power of two: level 1 and 2 from the base, then each from the one before
    assert [p.source for p in plan_chain(64, 64, 7, 48, 128 << 20)] == [0, 0, 2, 3, 4, 5]


@pytest.mark.parametrize("channels,bits,space,alpha", [(4, 8, "srgb", "weighted"), (4, 8, "linear", "straight"),
                                                      (2, 8, "srgb", "weighted"), (1, 16, "srgb", "straight"),
                                                      (4, 16, "srgb", "weighted"), (4, 16, "linear", "weighted")])
def test_model_chain_is_the_float64_reference_rounded(channels, bits, space, alpha):
    """The Python model (the self-check's expected bytes) against the float64 reference."""
    from gputex.mips.integer import self_check_image

    a = self_check_image(channels, bits)
    top = (1 << bits) - 1
    want = model_chain(a.tolist(), channels, bits, space == "srgb", alpha == "weighted", 4)
    ref = filter_levels(a / top, channels, srgb=space == "srgb", alpha_mode=alpha, levels=4)
    for lv, (m, r) in enumerate(zip(want, ref), start=1):
        assert_correctly_rounded(np.array(m, np.float64).reshape(r.shape), r, top, f"level {lv}")


# -- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("w,h", SIZES)
@pytest.mark.parametrize("space", ["srgb", "linear"])
@pytest.mark.parametrize("alpha", ["weighted", "straight", "premultiplied"])
def test_rgba8_box_is_correctly_rounded(gpu, w, h, space, alpha):
    rng = np.random.default_rng(1600 + w * 7 + h)
    for alpha_kind in ("opaque", "holes"):
        a = _image(rng, w, h, 4, 8, alpha_kind)
        got = _run(gpu, a, "rgba8unorm", space, alpha=alpha)
        assert len(got) == mip_count(w, h) - 1
        ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=alpha)
        for lv, (g, r) in enumerate(zip(got, ref), start=1):
            assert_correctly_rounded(g, r, 255, f"{w}x{h} {space} {alpha} {alpha_kind} level {lv}")


@pytest.mark.gpu
@pytest.mark.parametrize("w,h", SIZES)
@pytest.mark.parametrize("space", ["srgb", "linear"])
@pytest.mark.parametrize("alpha", ["weighted", "straight", "premultiplied"])
def test_rgba16_box_is_correctly_rounded(gpu, w, h, space, alpha):
    rng = np.random.default_rng(1616 + w * 7 + h)
    for alpha_kind in ("opaque", "holes"):
        a = _image(rng, w, h, 4, 16, alpha_kind)
        got = _run(gpu, a, "rgba16unorm", space, alpha=alpha)
        ref = filter_levels(a / 65535, 4, srgb=space == "srgb", alpha_mode=alpha)
        for lv, (g, r) in enumerate(zip(got, ref), start=1):
            assert_correctly_rounded(g, r, 65535, f"{w}x{h} {space} {alpha} {alpha_kind} level {lv}")


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits", [("rgba8unorm-srgb", 4, 8), ("bgra8unorm-srgb", 4, 8),
                                               ("bgra8unorm", 4, 8), ("r8unorm", 1, 8), ("rg8unorm", 2, 8),
                                               ("r16unorm", 1, 16), ("rg16unorm", 2, 16)])
@pytest.mark.parametrize("w,h", [(7, 13), (257, 131), (64, 64)])
def test_other_unorm_formats_are_correctly_rounded(gpu, fmt, channels, bits, w, h):
    if not gpu.has_feature(gputex.get_format(fmt).feature):
        pytest.skip(f"{gpu.name} lacks {gputex.get_format(fmt).feature}")
    rng = np.random.default_rng(1632 + channels * 100 + w)
    a = _image(rng, w, h, channels, bits, "holes")
    top = (1 << bits) - 1
    for space in (("srgb",) if fmt.endswith("srgb") else ("srgb", "linear")):
        got = _run(gpu, a, fmt, space)
        ref = filter_levels(a / top, channels, srgb=space == "srgb", alpha_mode="weighted")
        for lv, (g, r) in enumerate(zip(got, ref), start=1):
            assert_correctly_rounded(g.reshape(r.shape), r, top, f"{fmt} {w}x{h} {space} level {lv}")


@pytest.mark.gpu
def test_integer_chain_is_used_and_equals_the_model(gpu):
    """The default chain of an 8-bit image is the integer one; its bytes are the Python model's."""
    rng = np.random.default_rng(1648)
    a = _image(rng, 37, 23, 4, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, precision="fast")
    try:
        report = gputex.generate_mips(tex)
        assert report.precision == "integer" and report.exact and report.note == ""
        want = model_chain(a.tolist(), 4, 8, True, True, tex.levels)
        for lv in range(1, tex.levels):
            assert gputex.capture(tex, lv).tolist() == [[list(t) for t in row] for row in want[lv - 1]], f"level {lv}"
        assert gputex.generate_mips(tex, precision="fast").precision == "float"
    finally:
        tex.destroy()


@pytest.fixture
def disagreeing(gpu, monkeypatch):
    """An adapter whose rg8unorm integer chain disagrees with the model: the model's expected bytes
    are made to differ from what the chain gives (the cell chain's check fails too). Yields the
    real model."""
    import gputex.mips.intbox as intbox
    import gputex.mips.integer as integer

    key = ("self-check", "rg8unorm", "linear", True)
    odd_key = ("mip-odd-self-check", "rg8unorm", "linear", True)
    gpu.cache("mip-int").pop(key)
    gpu.cache("mip-odd").pop(odd_key)
    real = intbox.model_chain
    expected = integer.expected_levels

    def wrong(*args):  # the self-checks' reference off by one code at level 1 texel (0, 0)
        levels = expected(*args)
        levels[0][0, 0] ^= 1
        return levels

    monkeypatch.setattr(integer, "expected_levels", wrong)
    yield real
    gpu.cache("mip-int").pop(key)
    gpu.cache("mip-odd").pop(odd_key)


@pytest.mark.gpu
def test_failed_self_check_falls_back_and_says_so(gpu, disagreeing):
    a = _image(np.random.default_rng(1664), 9, 5, 2, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a, "linear"), "rg8unorm", mips=True, precision="fast")
    report = gputex.generate_mips(tex)
    tex.destroy()
    assert report.precision == "float"
    assert report.note.startswith(f"{gpu.name}: the integer mip chain failed its self-check "
                                  "(level 1 texel (0, 0): got [")
    assert report.note.endswith("); the float path was used")


@pytest.mark.gpu
def test_failed_self_check_takes_the_host_engine_where_it_serves(gpu, monkeypatch, disagreeing):
    """On a GPU adapter (the engine choice says shader) whose integer chain fails its self-check,
    the exact bytes come from the host's C engine, not the float path, and the note says so."""
    from gputex.mips import cpu

    if not cpu.available():
        pytest.skip("the C mip engine (gputex._mipcpu) is not built")
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    monkeypatch.setattr(cpu, "engine", lambda tex, layer=0: "shader")  # as on a GPU adapter
    a = _image(np.random.default_rng(1665), 9, 5, 2, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a, "linear"), "rg8unorm", mips=True, precision="fast")
    report = gputex.generate_mips(tex)
    got = [gputex.capture(tex, lv).tolist() for lv in range(1, tex.levels)]
    tex.destroy()
    assert (report.precision, report.engine, report.exact) == ("integer", "cpu", True)
    assert report.note.startswith(f"{gpu.name}: the integer mip chain failed its self-check (level 1 texel (0, 0): got [")
    assert report.note.endswith("); the host's C engine made it")
    want = disagreeing(a.tolist(), 2, 8, False, True, tex.levels)
    assert got == [[[list(t) for t in row] for row in level] for level in want]


@pytest.mark.gpu
def test_unknown_precision_is_refused(gpu):
    a = np.zeros((4, 4, 4), np.uint8)
    with pytest.raises(gputex.FormatError, match="^unknown mip precision 'double'; use exact, fast, float32 or int$"):
        gputex.upload(gpu, gputex.from_array(a), "rgba8unorm", mips=True, precision="double")


@pytest.mark.gpu
def test_chunked_footprints_and_unstored_levels_give_the_same_bytes(gpu, monkeypatch):
    """Footprints summed in chunks of rows (a small loop limit) and levels computed from the base
    instead of stored sums (a small binding limit) give the bytes of the plain plan."""
    import gputex.mips.intbox as intbox
    import gputex.mips.integer as mips_int

    rng = np.random.default_rng(1680)
    a = _image(rng, 257, 131, 4, 8, "holes")
    plain = _run(gpu, a, "rgba8unorm", "srgb")
    monkeypatch.setattr(intbox, "LOOP_LIMIT", 24)
    real_plan = mips_int.plan_chain
    plans = []

    def small(*args):
        p = real_plan(*args[:-1], 64 * 48)  # only levels of <= 64 texels may be stored
        plans.append(p)
        return p

    monkeypatch.setattr(mips_int, "plan_chain", small)
    chunked = _run(gpu, a, "rgba8unorm", "srgb", precision="int")  # (exact: the cell chain, mips/odd.py)
    assert any(p.chunks > 1 for p in plans[-1]) and any(p.source for p in plans[-1])
    assert not plans[-1][2].store  # level 3 (32x16) would have been stored
    for lv, (p, c) in enumerate(zip(plain, chunked), start=1):
        assert np.array_equal(p, c), f"level {lv}"
    ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted")
    for lv, (g, r) in enumerate(zip(chunked, ref), start=1):
        assert_correctly_rounded(g, r, 255, f"level {lv}")
