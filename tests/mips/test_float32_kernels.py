"""The float32 path's kernel filters (``mip_reduce.wgsl``, what runs without ``shader-f64``):
weights from the CPU's float64 tables, and levels filtered by separable tiles where their rows
fit, against the float64 reference and against the 2D footprint."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import gputex
from gputex.mips import chain, common
from gputex.mips.filters import TILE_SPAN, axis_words, kernel_table, tile_rows

from factory import alpha_holes
from reference import filter_levels


def _rows(n, m, filt):
    """axis_words as (first tap, weights) per destination texel."""
    words = np.frombuffer(axis_words(n, m, filt), np.uint32).reshape(m, -1)
    return words[:, 0].view(np.int32).tolist(), words[:, 1:].view(np.float32)


def test_axis_words_are_the_kernel_at_each_tap():
    """8 -> 4, triangle: texel 0's centre is 1 and the tent's half-width 2, so taps -1..3 weigh
    1/4 3/4 3/4 1/4 and the fifth candidate 0; every texel has the same 5 words, one texel of
    the source further on per texel."""
    first, w = _rows(8, 4, "triangle")
    assert first == [-1, 1, 3, 5]
    assert w.tolist() == [[0.25, 0.75, 0.75, 0.25, 0.0]] * 4


def test_axis_words_round_the_float64_kernel_to_float32():
    """Lanczos 7 -> 3 (ratio 7/3): texel 1's centre is 3.5, taps 3.5 +- 7 from floor(-3.5) = -4;
    each weight is lanczos((t + 0.5 - 3.5) / (7/3)) in float64, rounded once."""
    first, w = _rows(7, 3, "lanczos")
    assert first[1] == -4
    x = (np.arange(-4, -4 + w.shape[1]) + 0.5 - 3.5) / (7 / 3)
    want = np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0.0)
    assert w[1].tolist() == want.astype(np.float32).tolist()


def test_kernel_table_header_and_rows():
    """8 -> 4 along x: 5 taps a texel. 7 -> 3 along y (ratio 7/3, the tent's half-width 7/3): texel 0's
    taps run from floor(7/6 - 7/3) = -2 to ceil(7/6 + 7/3) = 4, 7 of them, the most of the three."""
    t = kernel_table(8, 7, 4, 3, "triangle")
    kx, ky, yoff, zero = struct.unpack_from("<4I", t)
    assert (kx, ky, zero) == (5, 7, 0)
    assert yoff == 4 + 4 * 6 and len(t) == 4 * (yoff + 3 * 8)
    assert t[16:16 + 4 * 24] == axis_words(8, 4, "triangle") and t[4 * yoff:] == axis_words(7, 3, "triangle")


def test_tile_rows():
    """2:1 Kaiser: texel y's taps are 2y - 5 .. 2y + 7 (13); 8 texels from y0 reach 2y0 - 5 ..
    2y0 + 21: 27 rows. A 16:1 step reaches far more than a tile holds."""
    assert tile_rows(4096, 2048, "kaiser") == tile_rows(4096, 2048, "lanczos") == 27
    assert tile_rows(4096, 2048, "triangle") == 19  # taps 2y - 1 .. 2y + 3
    assert tile_rows(8191, 4095, "kaiser") <= TILE_SPAN
    assert tile_rows(128, 8, "kaiser") > TILE_SPAN
    assert chain.tiled("kaiser", 128, 64) and not chain.tiled("kaiser", 128, 8) and not chain.tiled("box", 128, 64)


@pytest.fixture(params=[None, False], ids=["tiles", "2d"])
def tiles(request, monkeypatch):
    monkeypatch.setattr(chain, "TILES", request.param)
    return request.param


def _levels(gpu, a, fmt, space, **mip):
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, precision="float32", **mip)
    try:
        return [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


def _image(rng, w, h, channels, bits=8):
    top = (1 << bits) - 1
    a = rng.integers(0, top + 1, (h, w, channels)).astype(np.uint16 if bits == 16 else np.uint8)
    if bits == 8:
        alpha_holes(rng, a, 0.4)
    else:
        a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, a[..., -1])
    return a


@pytest.mark.parametrize("filt", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "mirror", "repeat"])
@pytest.mark.parametrize("w,h", [(61, 37), (300, 200), (7, 13)])
def test_float32_chains_match_the_reference_by_tiles_and_2d(rng, gpu, tiles, filt, wrap, w, h):
    """Both forms within the float64 reference's bar: 0.5 LSB at 8 bits (+ float32 noise); at 16 bits
    0.65, the float32 sums' noise across a rounding boundary (the lobes' negative weights cancel:
    measured up to 0.60 LSB by the 2D footprint and 0.57 by tiles, 300 x 200 Lanczos and Kaiser)."""
    for fmt, space, mode in (("rgba8unorm", "srgb", "weighted"), ("rgba8unorm", "srgb", "straight"),
                             ("rgba16unorm", "linear", "weighted")):
        bits = 16 if "16" in fmt else 8
        top = (1 << bits) - 1
        a = _image(rng, w, h, 4, bits)
        got = _levels(gpu, a, fmt, space, filter=filt, wrap=wrap, alpha=mode)
        ref = filter_levels(a / top, 4, srgb=space == "srgb", alpha_mode=mode, filter=filt, wrap_mode=wrap)
        for lv, (g, r) in enumerate(zip(got, ref), start=1):
            d = np.abs(g.astype(np.float64) - np.clip(r, 0, 1) * top)
            assert d.max() <= (0.65 if bits == 16 else 0.5 + 1e-3), (fmt, mode, lv, d.max())


def test_the_tiles_and_the_2d_footprint_agree(rng, gpu, monkeypatch):
    """Same weights, summed in another order: at most one code apart, and a level's tiles really
    ran (the entry points the chain asked for)."""
    asked = []
    real = chain.pipeline

    def spy(session, shader, consts, entries, entry="main", *rest):
        asked.append(entry)
        return real(session, shader, consts, entries, entry, *rest)

    monkeypatch.setattr(chain, "pipeline", spy)
    a = _image(rng, 300, 200, 4)
    out = {}
    for t in (None, False):
        monkeypatch.setattr(chain, "TILES", t)
        asked.clear()
        out[t] = _levels(gpu, a, "rgba8unorm", "srgb", filter="kaiser", alpha="weighted")
        assert set(asked) == ({"tile_direct"} if t is None else {"main_direct"})
    diffs = [np.abs(x.astype(int) - y.astype(int)) for x, y in zip(out[None], out[False])]
    assert max(d.max() for d in diffs) <= 1
    assert sum(int((d > 0).sum()) for d in diffs) < 0.01 * sum(d.size for d in diffs)


def test_kernel_tables_share_one_buffer_per_chain(gpu):
    steps = [(300, 200, 150, 100), (150, 100, 75, 50)]
    got = common.kernel_tables(gpu, "ktab-test", "kaiser", steps)
    assert got[0]["buffer"] is got[1]["buffer"]
    assert got[1]["offset"] % gpu.limits.get("min-storage-buffer-offset-alignment", 256) == 0
    # 2:1 Kaiser: 13 taps a texel on both axes, a row of 14 words; 16 bytes of header
    assert [g["size"] for g in got] == [16 + 4 * 14 * (150 + 100), 16 + 4 * 14 * (75 + 50)]
    assert common.kernel_tables(gpu, "ktab-test", "kaiser", steps)[0]["buffer"] is got[0]["buffer"]
    box = common.kernel_tables(gpu, "ktab-test", "box", steps)
    assert [b["size"] for b in box] == [16, 16]
