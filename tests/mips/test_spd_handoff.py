"""The single-pass chain's last pass made by the last workgroup of the pass before it (spd.HANDOFF,
mip_spd_tail.wgsl): which plans fold, the hand-off words' 31-bit encoding (checked here in Python,
independently of the shader), and, with the GPU forms forced on any adapter, chains that cross the
hand-off against the integer chain's reference (``integer.expected_levels``: the C engine, itself held
to ``intbox.model_chain``), stored and not, twice on the same resources (the hand-off buffer's words
and counter reset by the chain that used them), and mutants of the hand-off that must fail."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image

import gputex
import gputex.kernels as kernels
import gputex.mips.spd as spd
import gputex.mips.stored as stored
from gputex.layout import mip_count
from gputex.mips.intbox import MAX_BASE_TEXELS
from gputex.mips.integer import expected_levels
from gputex.texture import reusing

from factory import spd_forms

SENTINEL = 0xFFFFFFFF


def _size(w, h):
    return lambda lv: (max(1, w >> lv), max(1, h >> lv))


def _plan(w, h, later=spd.SUMS_LEVELS, per=6):
    return spd.spd_plan(w, h, mip_count(w, h), per, spd.SPLIT_FIRST, later)


@pytest.mark.parametrize("w,h,later,want", [
    (4096, 4096, 5, True), (8192, 8192, 5, False), (2048, 2, 5, True), (1, 2048, 5, True), (1024, 1024, 5, True),
    (512, 512, 5, True), (256, 256, 5, False), (16384, 16384, 5, True), (16384, 64, 5, True), (8192, 8, 5, False),
    (4096, 4096, None, True), (8192, 8192, None, True), (2048, 2, None, True), (512, 512, None, False),
    (16384, 16384, None, False), (16384, 64, None, False), (1024, 64, None, True), (8192, 8, None, True)])
def test_which_plans_fold(w, h, later, want):
    """A last pass after a pass from kept sums (three passes or more), from a kept level at most 16
    texels long. Passes from sums of five levels (anchored at their first: ANCHOR_FIRST): 4096^2 (3, 5,
    4: 16x16 -> 1), 512^2 (3, 5, 1: 2x2 -> 1), 16384^2 (3, 5, 5, 1); not 8192^2 nor 8192x8 (32x32, 32x1),
    not 256^2 (two passes: the pass before the last reads the base). Passes of six (anchored at their
    second): 4096^2 (8x8), 8192^2 (16x16 -> 1), 8192x8 (its rehearsal: 16x1 -> 1); not 512^2 (two
    passes), not 16384^2 nor 16384x64 (32x32, 32x1)."""
    plan = _plan(w, h, later)
    assert spd.fold(_size(w, h), plan, None) is want
    assert spd.fold(_size(w, h), plan, 2 * spd.LEVELS_PER_PASS) is want
    assert not spd.fold(_size(w, h), plan, 2 * spd.LEVELS_PER_PASS - 1)  # (stored: both passes' views)


@pytest.mark.parametrize("w,h,stored,want,second", [
    (4096, 4096, False, ([(0, 3), (3, 5), (8, 4)], True), [(0, 3), (3, 6), (9, 3)]),
    (4096, 4096, True, ([(0, 3), (3, 5), (8, 4)], True), [(0, 3), (3, 6), (9, 3)]),
    (8192, 8192, False, ([(0, 3), (3, 6), (9, 4)], False), [(0, 3), (3, 6), (9, 4)]),
    (8192, 8, False, ([(0, 3), (3, 6), (9, 4)], False), [(0, 3), (3, 6), (9, 4)]),
    (16384, 16384, False, ([(0, 3), (3, 5), (8, 5), (13, 1)], True), [(0, 3), (3, 6), (9, 5)]),
    (512, 512, False, ([(0, 3), (3, 5), (8, 1)], True), [(0, 3), (3, 6)]),
    (2048, 2, False, ([(0, 3), (3, 5), (8, 3)], True), [(0, 3), (3, 6), (9, 2)]),
    (256, 256, False, ([(0, 3), (3, 5)], True), [(0, 3), (3, 5)])])
def test_the_chain_takes_the_plan_of_fewer_dispatches(gpu, monkeypatch, w, h, stored, want, second):
    """With the GPU forms: passes from sums anchored at their first level (five levels a pass) where that
    plan needs no more dispatches than passes of six anchored at their second (a folded last pass is
    none); 8192^2 keeps passes of six (anchored first its last pass would read a 32x32 level, which the
    hand-off does not take: three dispatches, not two), and so does its rehearsal's shape (8192x8); a
    tie (256^2: two passes either way) anchored first. CPU adapters' forms: passes of six."""
    monkeypatch.setattr(gpu, "limits", dict(gpu.limits, **{"max-storage-textures-per-shader-stage": 12}))
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
    assert spd.chain_plan(gpu, w, h, mip_count(w, h), stored) == want
    monkeypatch.setattr(spd, "ANCHOR_FIRST", False)
    assert spd.chain_plan(gpu, w, h, mip_count(w, h), stored) == (second, False)
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", False)
    monkeypatch.setattr(spd, "ANCHOR_FIRST", None)
    assert spd.chain_plan(gpu, w, h, mip_count(w, h), stored) == (spd.spd_plan(w, h, mip_count(w, h)), False)


def test_a_device_of_four_views_anchors_first_in_passes_of_four(gpu, monkeypatch):
    """Stored levels on a device allowing 4 storage textures a stage: passes of at most four levels, both
    plans the same (3, 4, 4, 1 for 4096^2, none folded), anchored at their first level."""
    monkeypatch.setattr(gpu, "limits", dict(gpu.limits, **{"max-storage-textures-per-shader-stage": 4}))
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
    assert spd.chain_plan(gpu, 4096, 4096, 13, True) == ([(0, 3), (3, 4), (7, 4), (11, 1)], True)


def _keep(v: int) -> list[int]:
    """keep_handoff's three words of v (mip_spd_tail.wgsl) from its 32-bit words x, y, z."""
    x, y, z = v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF, v >> 64
    return [x & 0x7FFFFFFF, ((x >> 31) | (y << 1)) & 0x7FFFFFFF, ((y >> 30) | (z << 2)) & 0x7FFFFFFF]


def _take(a: int, b: int, c: int) -> int:
    """take3's sum from the three words (32-bit arithmetic as the shader's)."""
    m = 0xFFFFFFFF
    return ((a | (b << 31)) & m) | ((((b >> 1) | (c << 30)) & m) << 32) | ((c >> 2) << 64)


def test_handed_over_words_are_never_the_sentinel_and_give_the_sum_back():
    """Every sum a texel keeps is below 2^77 (2^30 base texels, each at most 65535 * 2^31), which 93 bits
    hold: the words come back to the same integer, and none is the sentinel (bit 31 is clear)."""
    top = MAX_BASE_TEXELS * 65535 << 31
    assert top < 1 << 77
    rng = np.random.default_rng(16)
    values = [0, 1, top, (1 << 77) - 1, (1 << 31) - 1, 1 << 31, (1 << 62) - 1, 1 << 62, (1 << 64) - 1, 1 << 64]
    values += [int(rng.integers(0, 1 << 62)) * (1 << int(rng.integers(0, 16))) % (1 << 77) for _ in range(3000)]
    for v in values:
        words = _keep(v)
        assert SENTINEL not in words and all(w < 1 << 31 for w in words)
        assert _take(*words) == v


@pytest.fixture
def gpu_forms(gpu, monkeypatch):
    """The GPU forms on any adapter (the hand-off among them; the subgroup form where the device has the
    feature, as on GPUs: it changes only the first pass, the hand-off is in the passes from kept sums),
    every mip_spd shader recorded."""
    yield from spd_forms(gpu, monkeypatch, {"ROUND_A_LEVEL": True, "SMEM_TABLES": True, "SUBGROUPS": True},
                         after=("mip-int",))


def _mutate(monkeypatch, edits, shader="mip_spd_tail.wgsl"):
    load = kernels.load_wgsl

    def mutated(name, **subs):
        code = load(name, **subs)
        if name == shader:
            for old, new in edits:
                assert old in code, old
                code = code.replace(old, new)
        return code

    monkeypatch.setattr(kernels, "load_wgsl", mutated)


def _spy_checks(monkeypatch, record) -> list:
    """The self-checks' chains run from now on (``integer.matches_model``), as ``record(size)`` makes them."""
    from gputex.mips import integer

    calls = []
    real = integer.matches_model

    def matches(session, fmt, color_space, alpha, chain, size, levels, storage=""):
        calls.append(record(size))
        return real(session, fmt, color_space, alpha, chain, size, levels, storage)

    monkeypatch.setattr(integer, "matches_model", matches)
    return calls


def _chains(gpu, a, b, fmt, space, alpha, store):
    """Levels 1.. of ``a``'s chain, then of ``b``'s in the same texture (its resources kept: a pooled
    texture), and the texture's storage format."""
    h, w = a.shape[:2]
    with reusing(gpu):
        tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, alpha=alpha, precision="exact",
                            store_levels=store)
        try:
            assert tex.extras is not None
            first = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
            gpu.device.queue.write_texture({"texture": tex.texture, "mip_level": 0, "origin": (0, 0, 0)},
                                           np.ascontiguousarray(b).tobytes(),
                                           {"offset": 0, "bytes_per_row": w * b.shape[2] * b.itemsize,
                                            "rows_per_image": h}, (w, h, 1))
            report = gputex.generate_mips(tex, alpha=alpha, precision="exact")
            assert report.precision == "integer" and report.note == ""
            second = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
            return first, second, tex.storage
        finally:
            tex.destroy()


def _made_again(gpu, a):
    """The report and levels 1.. of ``a``'s sRGB weighted exact chain made again after its upload's (a pooled
    texture, levels through the buffer)."""
    with reusing(gpu):
        tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, store_levels=False)
        try:
            report = gputex.generate_mips(tex, alpha="weighted", precision="exact")
            return report, [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
        finally:
            tex.destroy()


def _expected(a, space, alpha):
    h, w, c = a.shape
    return expected_levels(a, c, 8 if a.dtype == np.uint8 else 16, space == "srgb", alpha == "weighted",
                           mip_count(w, h))


def _same(got, want) -> bool:
    return len(got) == len(want) and all(np.array_equal(g.reshape(i.shape), i) for g, i in zip(got, want))


CASES = [("rgba8unorm-srgb", 4, 8, "srgb", "weighted"), ("rgba8unorm-srgb", 4, 8, "srgb", "straight"),
         ("rg8unorm", 2, 8, "linear", "weighted"), ("rgba16unorm", 4, 16, "srgb", "weighted")]
SIZES = [(2048, 2), (1024, 1024), (1, 2048), (4096, 16), (2048, 512), (8192, 4)]
#: The default run (~35 s on lavapipe): every size sRGB weighted, the other kinds at one or two sizes;
#: the rest with --slow (~30 s more).
FAST = {(CASES[1], (2048, 512)), (CASES[2], (2048, 512)), (CASES[2], (1, 2048)), (CASES[3], (1, 2048))}


def _params():
    for case in CASES:
        for size in SIZES:
            if size == (4096, 16) and case[1:3] != (4, 8):
                continue  # (the four-level tail: 8-bit RGBA only)
            if case[2] == 16 and size not in ((2048, 2), (1, 2048)):
                continue  # (16-bit: the strips only; its reference is the model's Python, ~100 s at 1024^2)
            for store in (False, True):
                if store and case[0] not in stored.STORED_FORMATS:
                    continue
                fast = case == CASES[0] or (case, size) in FAST
                yield pytest.param(*case, *size, store, marks=() if fast else pytest.mark.slow)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space,alpha,w,h,store", list(_params()))
def test_handoff_gives_the_integer_chains_bytes_twice(gpu, gpu_forms, monkeypatch, fmt, channels, bits, space, alpha,
                                                     w, h, store):
    """The last levels made by the last workgroup of the pass before them, after passes from sums anchored
    at their first level (ANCHOR_FIRST, the GPU forms' plans: 1024^2, its kept 4x4 level -> 1x1; 2048x512,
    8x2 -> 1x1; strips of one or two texels, 2048x2 and 1x2048; 4096x16, four levels made in the hand-off
    from 16x1) or at their second (8192x4: 16x1 -> 1x1); the levels stored through the texture's views
    (8-bit RGBA) or copied from the output buffer; two chains with different images on the same resources."""
    monkeypatch.setattr(stored, "STORE_LEVELS", store)
    rng = np.random.default_rng(1600 + w + 3 * h + channels + bits)
    a = _image(rng, w, h, channels, bits, "holes")
    b = _image(rng, w, h, channels, bits, "holes")
    first, second, storage = _chains(gpu, a, b, fmt, space, alpha, store)
    assert bool(storage) == store
    assert gpu_forms and any("tail_levels(t0);" in code for code in gpu_forms)  # (the hand-off was made)
    assert _same(first, _expected(a, space, alpha)), "the first chain"
    assert _same(second, _expected(b, space, alpha)), "the second chain, on the first one's resources"


@pytest.mark.gpu
@pytest.mark.parametrize("mutant", ["no counter reset", "first elected, no spin", "a word never written"])
def test_mutants_of_the_handoff_fail(gpu, gpu_forms, monkeypatch, mutant):
    """The tests above can fail: a counter not set back to 0 elects no workgroup in the next chain
    (its last levels are never made); the first workgroup to finish elected and reading the words
    without waiting for them reads sentinels where the others have not written yet (a 2048x512 chain:
    four workgroups hand over). The latter only where workgroups finish one after the other (CPU
    adapters: lavapipe runs them on its few threads); where they all run at once (the H200) the others
    have mostly written by then, so it is not asserted there. (A consumer that does not spin while
    elected by the count, or a sentinel not written back, is not observable on lavapipe: its
    workgroups' stores become visible in program order.) A word its producer never writes: the spin
    gives up (SPIN_LIMIT) and the bytes are wrong, the chain finishes."""
    if mutant == "first elected, no spin" and gpu.info.adapter_type != "CPU":
        pytest.skip(f"{gpu.name}: its workgroups run at once, the mutant's reads race with their stores")
    edits = {"no counter reset": [("            atomicStore(&handoff[0], 0u);", "")],
             "first elected, no spin": [("tail_last = select(0u, 1u, done == tl.groups);",
                                         "tail_last = select(0u, 1u, done == 1u);"),
                                        ("        if (v != SENTINEL || spins >= SPIN_LIMIT) {",
                                         "        if (true) {")],
             "a word never written": [("    atomicStore(&handoff[3u + j], ((v.y >> 30u) | (v.z << 2u)) & 0x7fffffffu);",
                                       "")]}[mutant]
    _mutate(monkeypatch, edits)
    monkeypatch.setattr(spd, "handoff_checked", lambda *a, **k: True)  # (its check would catch them)
    rng = np.random.default_rng(1690)
    a = _image(rng, 2048, 512, 4, 8, "holes")
    b = _image(rng, 2048, 512, 4, 8, "holes")
    first, second, _ = _chains(gpu, a, b, "rgba8unorm-srgb", "srgb", "weighted", False)
    assert any("tail_levels(t0);" in code for code in gpu_forms)
    if mutant == "no counter reset":
        assert _same(first, _expected(a, "srgb", "weighted"))
    assert not (_same(first, _expected(a, "srgb", "weighted")) and _same(second, _expected(b, "srgb", "weighted")))


@pytest.mark.gpu
@pytest.mark.parametrize("mutant", [False, True])
def test_the_second_level_form_is_checked_before_its_first_chain(gpu, gpu_forms, monkeypatch, mutant):
    """8192x8 (8192^2's plan, passes of 3, 6, 4 anchored at their second level) with the GPU forms, whose
    session self-check ran passes anchored at their first: before that chain, the self-check's 128x32 chain
    with its second pass anchored at its second level. A mutant of that form alone (quad_sums: its anchor
    texels' codes from twice their sums; the 8192x8 strip's own footprints never reach it) fails the check,
    and the chain takes passes anchored first (3, 5, 5: no hand-off, a dispatch more), the integer chain's
    bytes, and says so; without the mutant, the plan of passes of six and no note."""
    calls = _spy_checks(monkeypatch, lambda size: (size, getattr(spd._SECOND, "on", False)))
    if mutant:
        _mutate(monkeypatch, [("    finalize_sums(1u, p.x, p.y, collapse(an));",
                               "    finalize_sums(1u, p.x, p.y, collapse(add_acc(an, an)));")], "mip_spd.wgsl")
    a = _image(np.random.default_rng(1697), 8192, 8, 4, 8, "holes")
    report, got = _made_again(gpu, a)
    assert (spd.CHECK_SIZE, False) in calls and (spd.CHECK_SIZE, True) in calls
    assert report.precision == "integer"
    if mutant:
        assert report.sources == [0] * 3 + [3] * 5 + [8] * 5
        assert "passes anchored at their second level failed their self-check" in report.note
        assert spd.chain_plan(gpu, 8192, 8192, 14, False)[1] is True  # (later chains too)
    else:
        assert report.sources == [0] * 3 + [3] * 6 + [9] * 4 and report.note == ""
    assert _same(got, _expected(a, "srgb", "weighted"))


@pytest.mark.gpu
def test_handoff_self_check_and_its_failure(gpu, gpu_forms, monkeypatch):
    """The first chain that would fold checks a chain that crosses the hand-off (spd.HANDOFF_CHECK) first;
    where it disagrees (a mutant here), that chain and the session's later ones keep their last pass a
    dispatch of their own, and the report says so."""
    calls = _spy_checks(monkeypatch, lambda size: size)
    _mutate(monkeypatch, [("let code = round_one(lsums_get(slot), c, tl.lv[m].s);",
                           "let code = round_one(lsums_get(slot), c, tl.lv[m].s) ^ 1u;")])
    a = _image(np.random.default_rng(1695), 1024, 1024, 4, 8, "holes")
    report, got = _made_again(gpu, a)
    assert spd.HANDOFF_CHECK in calls and not spd.handoff_on(gpu)
    assert report.precision == "integer" and "hand-off to its last workgroup failed its self-check" in report.note
    assert _same(got, _expected(a, "srgb", "weighted"))
