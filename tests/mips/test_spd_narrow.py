"""The single-pass chain's first pass as the GPU forms make it since helper h16why (issue 16): level 3
from the lanes' 32-bit sums (``spd.NARROW_LEVEL3``, ``mip_spd.wgsl``'s ``sg_narrow``), an RGBA base
texel's codes by ``pack4x8unorm`` (``PACK_CODES``), one reciprocal a texel in the float estimates
(``RCP_EST``) and the 8-bit sRGB codes by one word a bucket (``spd.FAST_CODES``, ``srgb_code_one``,
``intbox.code_words``: its reasoning is checked here against the float thresholds themselves).
GPUs take them; here they are forced on lavapipe (subgroups of 8 lanes) and the bytes must be the
integer chain's (``mips/integer.py``, itself tested against the float64 reference): full and partial
tiles, three-level first passes whose level-3 sums the next pass reads, stored levels (the linear
view: ``PACK_CODES``' path for sRGB too), and the workgroup-memory tables on and off."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels

import gputex
import gputex.kernels as kernels
import gputex.mips.spd as spd
import gputex.mips.stored as stored
from gputex.mips.intbox import BUCKET_LOW, BUCKETS, CODE_EDGE, code_words, float_thresholds

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
@pytest.mark.parametrize("first", [None, spd.LEVELS_PER_PASS])
def test_an_8_bit_first_pass_keeps_its_sums_in_two_words_a_slot(gpu, forms, monkeypatch, first):
    """spd.KEPT_WORDS_2: the first pass (three levels, or six) writes two words a slot and the next
    pass reads them so; the passes after keep three. The integer chain's bytes."""
    monkeypatch.setattr(spd, "FIRST_PASS_LEVELS", first)
    kept = []
    real = spd._kept_words

    def recording(fmt, src, forms):
        kept.append((src, real(fmt, src, forms)))
        return kept[-1][1]

    monkeypatch.setattr(spd, "_kept_words", recording)
    a = _image(np.random.default_rng(2697), 2048, 1024, 4, 8, "holes")
    report, got = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    assert report.note == "" and sorted(set(report.sources)) == ([0, 3, 9] if first is None else [0, 6])
    # (source level, words a slot) of each pass, the self-check's chain's among them
    assert set(kept) == ({(0, 2), (3, 3), (9, 3)} if first is None else {(0, 2), (6, 3)})
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


def _fast_code(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """srgb_code_one of mip_spd.wgsl in numpy for float32 z >= 0, its safe buckets only: (the code
    before any exact comparison, the threshold it compares with exactly, 0 for none), and which
    z fell in an unsafe bucket (those take bucket_code and exact_one, tested in test_spd_one_threshold)."""
    words = np.array(code_words(), np.int64)
    margin = np.float32(3.814697265625e-6)
    bits = z.astype(np.float32).view(np.uint32).astype(np.int64)
    w = words[np.clip((bits >> 16) - BUCKET_LOW, 0, BUCKETS - 1)]
    k = w & 255
    thr = ((bits & 0xFFFF0000) | (w >> 16)).astype(np.uint32).view(np.float32)
    has = (w & 0x100) != 0
    near = has & (z >= thr * (np.float32(1) - margin)) & (z < thr * (np.float32(1) + margin))
    return k + (has & (z >= thr)), np.where(near, k + 1, 0), (w & 0x200) != 0


def test_one_word_a_bucket_gives_the_float_thresholds_code_or_names_the_one_threshold_in_doubt():
    """For values all over the range, next to every threshold and every bucket edge: where no exact
    comparison is asked for, the code is the float thresholds' one and every threshold is farther than
    2^-19 of the value (so a value within 2^-20 of it has that code); where one is, the other thresholds
    are that far and the code is one of the two beside it."""
    q = np.array(float_thresholds(), np.float32)[1:]  # codes 1..255
    rng = np.random.default_rng(16)
    qb = q.view(np.uint32).astype(np.int64)
    edges = ((np.arange(BUCKETS, dtype=np.int64) + BUCKET_LOW) << 16)
    around = [(qb[:, None] + np.arange(-300, 301)[None, :]).ravel(), (edges[:, None] + np.arange(-200, 201)[None, :]).ravel()]
    z = np.concatenate([np.concatenate(around).astype(np.uint32).view(np.float32),
                        (rng.random(300000) * 2.0 ** 31).astype(np.float32),
                        (2.0 ** rng.uniform(-20, 31.2, 300000)).astype(np.float32), np.float32([0, 2.0 ** 31])])
    k, j, unsafe = _fast_code(z)
    assert unsafe.sum() < z.size // 1000  # (one bucket in 1793)
    z, k, j = z[~unsafe].astype(np.float64), k[~unsafe], j[~unsafe]
    want = np.searchsorted(q, z, side="right")  # (thresholds >= 0.9% apart: only the two beside z can be close)
    qq = np.concatenate([[-1e30], q.astype(np.float64), [1e30]])
    close_below = (z - qq[want]) < qq[want] * 2.0 ** -19      # threshold `want` (code want's own)
    close_above = (qq[want + 1] - z) < qq[want + 1] * 2.0 ** -19  # threshold want + 1
    sure = j == 0
    assert np.array_equal(k[sure], want[sure])
    assert not (close_below | close_above)[sure].any()
    doubt = ~sure
    assert doubt.sum() > 1000  # (the thresholds' neighbourhoods were sampled)
    assert not (close_below & (want != j))[doubt].any() and not (close_above & (want + 1 != j))[doubt].any()
    assert np.isin(want[doubt] - j[doubt], [-1, 0]).all()
    assert CODE_EDGE * 2.0 ** -24 >= 2 * 3.814697265625e-6  # (the edge keeps twice the margin)
