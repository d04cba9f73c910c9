"""The GPU forms' three-level first pass by an entry point of its own (spd.FIRST_ENTRY,
mip_spd_first.wgsl's first_main), forced on any adapter whose device has the ``subgroup`` feature
(lavapipe: 8 lanes) with the other GPU forms: which passes take it (the first pass of three levels
whose third halves both axes of its second, 8-bit, level 3 from the lanes in 32-bit words; every
other pass keeps main, and so does that pass where a precondition fails), and the bytes against the
integer chain's (``integer.expected_levels``, the C engine held to ``intbox.model_chain``; the model
itself for the smallest images): partial tiles, one-texel-high levels, a chain of four levels (the
first pass is all of it: no sums kept), stored levels and the buffer, sRGB weighted and straight,
linear RGBA, rg8 and r8. A mutant of the entry must fail."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image

import gputex
import gputex.kernels as kernels
import gputex.mips.spd as spd
import gputex.mips.stored as stored
from gputex.layout import mip_count
from gputex.mips.intbox import model_chain
from gputex.mips.integer import expected_levels

from factory import spd_forms


@pytest.fixture
def first_entry(gpu, monkeypatch):
    """The GPU forms with the subgroup form and FIRST_ENTRY on; yields (every mip_spd.wgsl text made,
    every (entry point, text) of the chain's pipelines)."""
    if not gpu.has_feature("subgroup"):
        pytest.skip(f"{gpu.name}: no subgroup feature")
    pipes: list[tuple[str, str]] = []
    real = kernels.compute_pipeline

    def recording(session, shader, entries, **kw):
        if shader == "mip_spd.wgsl":
            pipes.append((kw.get("entry", "main"), kernels.load_wgsl(shader, **kw.get("subs", {}))))
        return real(session, shader, entries, **kw)

    monkeypatch.setattr(kernels, "compute_pipeline", recording)
    flags = {"ROUND_A_LEVEL": True, "SMEM_TABLES": True, "SUBGROUPS": True, "FIRST_ENTRY": True}
    for seen in spd_forms(gpu, monkeypatch, flags, after=("mip-int",)):
        yield seen, pipes


def _chain(gpu, a, fmt, space, alpha, store):
    """Levels 1.. of ``a``'s exact chain (made again after the upload's: its report, no note: no self-check
    failed, the subgroup form kept)."""
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, alpha=alpha, precision="exact",
                        store_levels=store)
    try:
        assert bool(tex.storage) == store
        report = gputex.generate_mips(tex, alpha=alpha, precision="exact")
        assert report.precision == "integer" and report.note == ""
        return [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


def _want(a, space, alpha, model=False):
    h, w, c = a.shape
    if model:  # (the model itself: small images only, ~30 ms at 128x32)
        return [np.array(lv, np.uint8).reshape(len(lv), len(lv[0]), c)
                for lv in model_chain(a.tolist(), c, 8, space == "srgb", alpha == "weighted", mip_count(w, h))]
    return expected_levels(a, c, 8, space == "srgb", alpha == "weighted", mip_count(w, h))


# (format, channels, space, alpha, w, h, stored): 128x32, the self-check's (level 2 32x8: tiles cut by the
# edge, a workgroup's second tile half outside); 512x8 (level 3 64x1, one texel high; levels 1-2 of 4 and
# 2 rows); 8x8 (four levels: the first pass is the chain, STORE off, one tile of 2x2 anchor texels); 256x1024
# (full tiles, the workgroup's two tiles along x, portrait); 64x16 linear / rg8 / r8
CASES = [("rgba8unorm-srgb", 4, "srgb", "weighted", 128, 32, False),
         ("rgba8unorm-srgb", 4, "srgb", "weighted", 128, 32, True),
         ("rgba8unorm-srgb", 4, "srgb", "straight", 512, 8, True),
         ("rgba8unorm-srgb", 4, "srgb", "weighted", 512, 8, False),
         ("rgba8unorm-srgb", 4, "srgb", "weighted", 8, 8, True),
         ("rgba8unorm-srgb", 4, "srgb", "straight", 256, 1024, False),
         ("rgba8unorm", 4, "linear", "weighted", 64, 16, True),
         ("rg8unorm", 2, "linear", "weighted", 64, 16, False),
         ("r8unorm", 1, "linear", "straight", 512, 8, False)]


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,space,alpha,w,h,store", CASES)
def test_first_entry_gives_the_integer_chains_bytes(gpu, first_entry, monkeypatch, fmt, channels, space, alpha,
                                                    w, h, store):
    seen, pipes = first_entry
    monkeypatch.setattr(stored, "STORE_LEVELS", store)
    taken: list = []
    real = spd._first_entry

    def spy(size, src, *rest):  # (the passes of this image's chains, not of the self-checks' chains)
        took = real(size, src, *rest)
        if size(0) == (w, h):
            taken.append((src, took))
        return took

    monkeypatch.setattr(spd, "_first_entry", spy)
    a = _image(np.random.default_rng(1660 + w + 3 * h + channels), w, h, channels, 8, "holes")
    got = _chain(gpu, a, fmt, space, alpha, store)
    assert (0, True) in taken and all(not took for src, took in taken if src > 0)  # (its first pass took it)
    firsts = [code for entry, code in pipes if entry == "first_main"]
    assert firsts and all("fn first_main(" in code for code in firsts)
    assert all("fn first_main(" not in code for entry, code in pipes if entry == "main")
    want = _want(a, space, alpha, model=w * h <= 4096)
    assert len(got) == len(want) == mip_count(w, h) - 1
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g.reshape(i.shape), i), f"{fmt} {alpha} {w}x{h} stored={store}: level {lv}"


def _size(w, h):
    return lambda lv: (max(1, w >> lv), max(1, h >> lv))


GPU = {"ROUND_A_LEVEL": True, "BITS": 8, "SCREEN": True}
NARROW = {"SG_LEVEL3N": "sg_level3n", "SG_NARROW": "true"}


@pytest.mark.parametrize("w,h,src,consts,known,subs,want", [
    (128, 32, 0, GPU, {"PASS_LEVELS": 3, "SG_TILE": 1}, NARROW, True),
    (8, 8, 0, GPU, {"PASS_LEVELS": 3, "SG_TILE": 1}, NARROW, True),
    (1024, 4, 0, GPU, {"PASS_LEVELS": 3, "SG_TILE": 0}, NARROW, False),  # (level 3 does not halve y)
    (1024, 2, 0, GPU, {"PASS_LEVELS": 3, "SG_TILE": 1}, NARROW, False),  # (level 2 does not halve y: no QUAD)
    (128, 32, 0, GPU, {"PASS_LEVELS": 6, "SG_TILE": 1}, NARROW, False),
    (128, 32, 3, GPU, {"PASS_LEVELS": 3}, NARROW, False),
    (128, 32, 0, dict(GPU, BITS=16), {"PASS_LEVELS": 3, "SG_TILE": 1}, NARROW, False),
    (128, 32, 0, dict(GPU, SCREEN=False), {"PASS_LEVELS": 3, "SG_TILE": 1}, NARROW, False),
    (128, 32, 0, dict(GPU, ROUND_A_LEVEL=False), {"PASS_LEVELS": 3, "SG_TILE": 1}, NARROW, False),
    (128, 32, 0, GPU, {"PASS_LEVELS": 3, "SG_TILE": 1}, {}, False),  # (no subgroup form)
    (128, 32, 0, GPU, {"PASS_LEVELS": 3, "SG_TILE": 1}, {"SG_LEVEL3N": "sg_level3n"}, False)])
def test_which_passes_take_the_first_entry(monkeypatch, w, h, src, consts, known, subs, want):
    monkeypatch.setattr(spd, "FIRST_ENTRY", True)
    assert spd._first_entry(_size(w, h), src, consts, known, subs) is want
    monkeypatch.setattr(spd, "FIRST_ENTRY", None)  # (the default: the same)
    assert spd._first_entry(_size(w, h), src, consts, known, subs) is want
    monkeypatch.setattr(spd, "FIRST_ENTRY", False)
    assert spd._first_entry(_size(w, h), src, consts, known, subs) is False


@pytest.mark.gpu
def test_passes_without_the_preconditions_keep_main(gpu, first_entry, monkeypatch):
    """1024x4 (level 3 is not 2x2 of level 2: SG_TILE 0): no pass of its chain takes the entry (the
    kind's self-check, 128x32, does), and the bytes are the integer chain's still; the text of every
    pipeline made from main has no first_main in it. (16-bit and the other preconditions: above.)"""
    seen, pipes = first_entry
    monkeypatch.setattr(stored, "STORE_LEVELS", False)
    a = _image(np.random.default_rng(1670), 1024, 4, 4, 8, "holes")
    got = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", False)
    want = _want(a, "srgb", "weighted")
    assert len(got) == len(want) and all(np.array_equal(g.reshape(i.shape), i) for g, i in zip(got, want))
    assert all("fn first_main(" not in code for entry, code in pipes if entry == "main")
    assert [entry for entry, _ in pipes].count("first_main") == 1  # (the self-check's first pass)


@pytest.mark.gpu
def test_a_mutant_of_the_first_entry_fails(gpu, first_entry, monkeypatch):
    """The tests above can fail: the entry's anchor texel taken one texel over (p.x + 1u) gives wrong
    bytes (its self-check's 128x32 chain disagrees too: the chain then keeps the subgroup form off)."""
    seen, pipes = first_entry
    load = kernels.load_wgsl

    def mutated(name, **subs):
        code = load(name, **subs)
        if name == "mip_spd_first.wgsl":
            old = "        nar = quad_by_child(p);"
            assert old in code
            code = code.replace(old, "        nar = quad_by_child(p + vec2<u32>(1u, 0u));")
        return code

    monkeypatch.setattr(kernels, "load_wgsl", mutated)
    monkeypatch.setattr(spd, "self_check", lambda *a, **k: (True, ""))
    a = _image(np.random.default_rng(1680), 128, 32, 4, 8, "holes")
    got = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", False)
    assert any(entry == "first_main" for entry, _ in pipes)
    want = _want(a, "srgb", "weighted")
    assert not all(np.array_equal(g.reshape(i.shape), i) for g, i in zip(got, want))


def _table_copy(code: str) -> str:
    """A shader's copy of the tables into workgroup memory and its barrier, comments and spaces dropped."""
    import re

    start = code.index("if (SMEM_TABLES && ti < 256u) {")
    end = code.index("workgroupBarrier();", start)
    return re.sub(r"\s+", "", re.sub(r"//[^\n]*", "", code[start:end]))


def test_the_first_entrys_table_copy_is_mains():
    """first_main writes main's table copy out (main's text stays as it was): the two agree but for main's
    `&& !FROM_SUMS` (false in a first pass) and the comments. (On lavapipe a dropped line of it can go
    unseen: its workgroup memory keeps the last dispatch's tables.)"""
    main = _table_copy(kernels.load_wgsl("mip_spd.wgsl"))
    first = _table_copy(kernels.load_wgsl("mip_spd_first.wgsl"))
    assert "&&!FROM_SUMS" in main
    assert first == main.replace("&&!FROM_SUMS", "")
