"""The single-pass chain's subgroup form (spd.SUBGROUPS, mip_spd.wgsl's sg_levels): levels 3 (and
4, with subgroups of 16 lanes or more) of a pass summed by lanes exchanging their integer sums, not
through workgroup memory. Forced here on any adapter whose device has the ``subgroup`` feature
(lavapipe: 8 lanes, so level 3 by exchanges and level 4.. by the rounds), with the other GPU forms:
the bytes must be the integer chain's (``mips/integer.py``, itself tested against the float64
reference), for full tiles, partial ones (a 128x16 image: the self-check's), levels one texel high,
two passes (the second from stored sums, three words a sum) and stored levels."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels

import gputex
import gputex.mips.spd as spd
import gputex.mips.stored as stored

from factory import spd_forms

CASES = [("rgba8unorm-srgb", 4, 8, "srgb", "weighted"), ("rgba8unorm-srgb", 4, 8, "srgb", "straight"),
         ("rgba8unorm", 4, 8, "linear", "weighted"), ("rg8unorm", 2, 8, "linear", "weighted"),
         ("r8unorm", 1, 8, "linear", "straight"), ("rgba16unorm", 4, 16, "srgb", "weighted")]


@pytest.fixture
def subgroups(gpu, monkeypatch):
    """The subgroup form on, every shader it compiles recorded."""
    if not gpu.has_feature("subgroup"):
        pytest.skip(f"{gpu.name}: no subgroup feature")
    yield from spd_forms(gpu, monkeypatch, {"SUBGROUPS": True, "ROUND_A_LEVEL": True})


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space,alpha", CASES)
@pytest.mark.parametrize("w,h", [(512, 256), (128, 16), (1024, 4)])
@pytest.mark.parametrize("first", [None, spd.LEVELS_PER_PASS])
def test_subgroup_form_gives_the_integer_chains_bytes(gpu, subgroups, monkeypatch, fmt, channels, bits, space, alpha,
                                                      w, h, first):
    """A first pass of spd.SPLIT_FIRST levels (level 3 its last: its sums kept) or of six (the
    rounds in workgroup memory after level 3)."""
    monkeypatch.setattr(spd, "FIRST_PASS_LEVELS", first)
    a = _image(np.random.default_rng(2300 + 7 * channels + bits + w), w, h, channels, bits, "holes")
    report, got = _levels(gpu, a, fmt, space, alpha, "exact")
    assert report.precision == "integer" and report.note == ""
    assert subgroups and all("subgroupShuffleXor(" in code for code in subgroups)
    _, want = _levels(gpu, a, fmt, space, alpha, "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"{fmt} {alpha} {w}x{h} level {lv}"


@pytest.mark.gpu
def test_subgroup_form_stores_the_integer_chains_bytes(gpu, subgroups, monkeypatch):
    monkeypatch.setattr(stored, "STORE_LEVELS", True)
    a = _image(np.random.default_rng(2399), 256, 512, 4, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, store_levels=True)
    try:
        assert tex.storage == "rgba8unorm"
        got = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()
    assert subgroups and "    store_level(i, x, y, codes);" in subgroups[-1]  # (the stored form's LEVEL_OUT)
    _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"level {lv}"


@pytest.mark.gpu
def test_a_failing_subgroup_form_leaves_the_single_pass_chain_with_its_rounds(gpu, subgroups, monkeypatch):
    """An adapter whose lanes are not what the form assumes (here: shuffles that return the lane's
    own sums): the form fails its self-check, the session's chains take the rounds in workgroup
    memory (the single-pass chain still, not the multi-pass one), the integer chain's bytes, and
    the report says so."""
    monkeypatch.setitem(spd.SG_SUBS, "SG_XOR", "no_shuffle")
    a = _image(np.random.default_rng(2470), 512, 256, 4, 8, "holes")
    report, got = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "exact")
    assert report.precision == "integer"
    assert "the single-pass mip chain's subgroup form failed its self-check" in report.note
    assert "rounds in workgroup memory were used" in report.note
    plan, _ = spd.chain_plan(gpu, 512, 256, 10, False)
    assert report.sources == [s for s, n in plan for _ in range(n)]
    assert not spd.subgroups_on(gpu)
    assert any("sg_levels(" in code for code in subgroups)  # the form was tried
    assert "no_sg_levels(wg.xy" in subgroups[-1]  # and the chain made without it
    _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"level {lv}"


@pytest.mark.gpu
def test_a_subgroup_form_failing_only_when_it_stores_keeps_its_lanes_and_takes_the_buffer(gpu, subgroups, monkeypatch):
    """Stored levels that disagree while the form's buffer is right: the storing failed, not the
    lanes. The chain keeps the subgroup form, makes the levels through its buffer (the integer
    chain's bytes), and the report names the storing alone."""
    from test_mips_store import _chain

    import gputex.mips.integer as integer

    monkeypatch.setattr(stored, "STORE_LEVELS", True)
    real = integer.matches_model

    def disagreeing(*args, storage="", **kw):
        if storage:
            return False, "level 1 texel (0, 0): got [1, 2, 3, 4], expected [1, 2, 3, 5]"
        return real(*args, storage=storage, **kw)

    monkeypatch.setattr(integer, "matches_model", disagreeing)
    failed = ("failed", "rgba8unorm-srgb")
    gpu.cache("mip-store").pop(failed)
    try:
        a = _image(np.random.default_rng(2480), 512, 256, 4, 8, "holes")
        report, got, _ = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "rgba8unorm")
        assert report.precision == "integer"
        assert report.note == (f"{gpu.name}: storing the mip levels through rgba8unorm failed its self-check "
                               "(level 1 texel (0, 0): got [1, 2, 3, 4], expected [1, 2, 3, 5]); "
                               "they went through a buffer")
        assert spd.subgroups_on(gpu)
        assert "subgroupShuffleXor(" in subgroups[-1] and "    buffer_level(i, x, y, codes);" in subgroups[-1]
        assert stored.stored_format(gpu, gputex.get_format("rgba8unorm-srgb"), 512, 256, 10) == ""
        _, want = _levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "int")
        for lv, (g, i) in enumerate(zip(got, want), start=1):
            assert np.array_equal(g, i), f"level {lv}"
    finally:
        gpu.cache("mip-store").pop(failed)


@pytest.mark.gpu
@pytest.mark.parametrize("tiles", [(1, 1), (2, 1), (2, 2)])
@pytest.mark.parametrize("fmt,channels,bits,space,alpha,w,h", [
    ("rgba8unorm-srgb", 4, 8, "srgb", "weighted", 256, 64), ("rgba8unorm-srgb", 4, 8, "srgb", "weighted", 64, 512),
    ("rg8unorm", 2, 8, "linear", "weighted", 512, 128)])
def test_first_pass_workgroups_of_several_tiles_give_the_integer_chains_bytes(gpu, subgroups, monkeypatch, tiles, fmt,
                                                                           channels, bits, space, alpha, w, h):
    """spd.GROUP_TILES: the three-level first pass in workgroups of 256, 512 (2 x 1 tiles) or 1024
    (2 x 2) invocations, tiles past the image's edge included (256x64: 4 x 1 tiles; 64x512: 1 x 8)."""
    monkeypatch.setattr(spd, "GROUP_TILES", tiles)
    a = _image(np.random.default_rng(2500 + w + h + channels), w, h, channels, bits, "holes")
    report, got = _levels(gpu, a, fmt, space, alpha, "exact")
    assert report.precision == "integer" and report.note == ""
    size = 256 * tiles[0] * tiles[1]
    assert any(f"@workgroup_size({size}u)" in code for code in subgroups)
    _, want = _levels(gpu, a, fmt, space, alpha, "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"{fmt} {w}x{h} tiles {tiles} level {lv}"
