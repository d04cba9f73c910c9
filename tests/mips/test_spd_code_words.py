"""The single-pass chain's 8-bit sRGB codes from one word a bucket (spd.CODE_WORDS, mip_spd.wgsl's
word_code, intbox.code_words): the word's code must be the float thresholds' code of every float,
its doubt must cover every float within CODE_DOUBT steps of a threshold and name that threshold
(checked here in numpy, independently of the shader); and the GPU forms with it, forced on any
adapter, must give the integer chain's bytes, also with the doubt widened 256-fold so that
thousands of codes take the exact comparison (the edge flags among them)."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels

import gputex.kernels as kernels
import gputex.mips.integer as integer
import gputex.mips.spd as spd
from gputex.mips.intbox import BUCKET_LOW, BUCKETS, CODE_DOUBT, code_words, float_thresholds

from factory import spd_forms

WIDE = 16384  # float steps: a quarter of the closest thresholds' distance (100925 steps) at most
DOUBT = f"const CODE_DOUBT: u32 = {CODE_DOUBT}u;"


def _word_code(z: np.ndarray, doubt: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """word_code of mip_spd.wgsl in numpy: (code, in doubt, the threshold compared with)."""
    words = np.array(code_words(doubt), np.int64)
    zb = z.astype(np.float32).view(np.uint32).astype(np.int64)
    w = words[np.clip((zb >> 16) - BUCKET_LOW, 0, BUCKETS - 1)]
    lo, t, k0, has = zb & 0xFFFF, w >> 16, w & 255, (w >> 8) & 1
    near_t = (has == 1) & (np.abs(lo - t) < doubt)
    near_lo = ((w >> 9) & 1 == 1) & (lo < doubt)
    near_hi = ((w >> 10) & 1 == 1) & (lo >= 65536 - doubt)
    code = k0 + ((has == 1) & (lo >= t))
    j = k0 + near_t + np.where(near_hi, 1 + has, 0)
    return code, near_t | near_lo | near_hi, j


@pytest.mark.parametrize("doubt", [CODE_DOUBT, WIDE])
def test_code_words_give_the_float_thresholds_code_and_every_doubt(doubt):
    q = np.array(float_thresholds(), np.float32)
    qb = q[1:].view(np.uint32).astype(np.int64)
    rng = np.random.default_rng(5)
    near = (qb[:, None] + np.arange(-3 * doubt, 3 * doubt + 1, max(1, doubt // 64))[None, :]).ravel()
    edges = ((np.arange(BUCKETS) + BUCKET_LOW) << 16)[:, None] + np.arange(-2 * doubt, 2 * doubt, 7)[None, :]
    zb = np.concatenate([near, edges.ravel(), qb - doubt, qb - doubt + 1, qb + doubt - 1, qb + doubt])
    z = np.concatenate([zb.astype(np.uint32).view(np.float32), (rng.random(300000) * 2.0 ** 31).astype(np.float32),
                        (2.0 ** rng.uniform(-20, 31, 300000)).astype(np.float32), np.float32([0, 2.0 ** 31])])
    code, doubtful, j = _word_code(z, doubt)
    want = np.searchsorted(q[1:], z, side="right")  # k with q[k] <= z < q[k + 1]
    assert np.array_equal(code, want)
    bits = z.view(np.uint32).astype(np.int64)
    nearest = np.searchsorted(qb, bits)  # the first threshold at or above z (index into q[1..])
    below = np.abs(bits - qb[np.maximum(nearest - 1, 0)])
    above = np.abs(qb[np.minimum(nearest, 254)] - bits)
    close = np.minimum(below, above) < doubt
    assert close.sum() > 1000 and doubtful[close].all()  # every float that close to a threshold
    # the threshold compared with is the near one (q[j], j from 1; at a bucket's edge the flag holds for
    # the edge's doubt steps, so up to twice as far), and z's code is j - 1 or j
    assert (np.abs(bits[doubtful] - qb[j[doubtful] - 1]) < 2 * doubt).all()
    assert ((code[doubtful] == j[doubtful]) | (code[doubtful] == j[doubtful] - 1)).all()
    assert doubtful.sum() < 2 * close.sum() + 2000  # (not every float: the flags are per bucket edge)


@pytest.fixture
def gpu_forms(gpu, monkeypatch):
    """The GPU forms (CODE_WORDS among them) on any adapter, every mip_spd shader recorded."""
    yield from spd_forms(gpu, monkeypatch, {"ROUND_A_LEVEL": True, "SMEM_TABLES": True}, after=("mip-int",))


@pytest.mark.gpu
@pytest.mark.parametrize("doubt", [CODE_DOUBT, WIDE])
@pytest.mark.parametrize("sg", [False, True])
def test_code_words_give_the_integer_chains_bytes(gpu, gpu_forms, monkeypatch, doubt, sg):
    """A 512x256 chain: a first pass of three levels (level 3 from the lanes with ``sg``, else by the
    rounds), the second from its sums; sRGB weighted and straight alpha."""
    if sg and not gpu.has_feature("subgroup"):
        pytest.skip(f"{gpu.name}: no subgroup feature")
    monkeypatch.setattr(spd, "SUBGROUPS", sg)
    a = _image(np.random.default_rng(2500 + doubt), 512, 256, 4, 8, "holes")
    cases = [("srgb", "weighted"), ("srgb", "straight")]
    want = {c: _levels(gpu, a, "rgba8unorm-srgb", c[0], c[1], "int")[1] for c in cases}
    if doubt != CODE_DOUBT:  # the table's flags and the shader's doubt widened together
        monkeypatch.setattr(integer, "code_words", lambda: code_words(doubt))
        gpu.cache("mip-int").items.clear()
        load = kernels.load_wgsl

        def wide(name, **subs):
            code = load(name, **subs)
            if name != "mip_spd.wgsl":  # (the hand-off's tail and the first pass's entry, put into
                return code                 # mip_spd.wgsl: its word_code)
            assert DOUBT in code
            return code.replace(DOUBT, f"const CODE_DOUBT: u32 = {doubt}u;")

        monkeypatch.setattr(kernels, "load_wgsl", wide)
    for space, alpha in cases:
        report, got = _levels(gpu, a, "rgba8unorm-srgb", space, alpha, "exact")
        assert report.precision == "integer" and report.note == ""
        for lv, (g, i) in enumerate(zip(got, want[space, alpha]), start=1):
            assert np.array_equal(g, i), f"{alpha} level {lv}"
    assert gpu_forms and all("return WORD_CODE" not in c and "word_code(Big(wl[0].x" in c for c in gpu_forms)


@pytest.mark.gpu
@pytest.mark.parametrize("sg", [False, True])
@pytest.mark.parametrize("narrow", [None, False])
def test_level3_over_transparent_level2_texels_gives_the_integer_chains_bytes(gpu, gpu_forms, monkeypatch, sg, narrow):
    """Level-2 texels whose 4x4 base texels are all transparent (their colour hidden under alpha 0)
    next to covered ones, so a level-3 texel's colour sums must leave their plain sums out (the
    subgroup form's narrow sums, spd.SG_NARROW, and its 96-bit ones)."""
    if sg and not gpu.has_feature("subgroup"):
        pytest.skip(f"{gpu.name}: no subgroup feature")
    monkeypatch.setattr(spd, "SUBGROUPS", sg)
    monkeypatch.setattr(spd, "SG_NARROW", narrow)
    rng = np.random.default_rng(2600)
    a = _image(rng, 256, 128, 4, 8, "opaque")
    a[..., 3] = rng.integers(1, 256, a.shape[:2])
    clear = np.kron(rng.random((32, 64)) < 0.5, np.ones((4, 4), bool))  # level-2 footprints, half of them
    a[..., 3][clear] = 0
    report, got = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    assert report.precision == "integer" and report.note == ""
    _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"level {lv}"
    assert gpu_forms and all(("= sg_level3n(wg.xy" in c) == (sg and narrow is None) for c in gpu_forms)
