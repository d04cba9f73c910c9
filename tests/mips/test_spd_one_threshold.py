"""The single-pass chain's 8-bit screen in its GPU form (mip_spd.wgsl, ONE): a code the float estimate leaves in doubt
is decided by one exact comparison with the threshold next to the estimate (exact_one), its code
from the bucket table (intbox.bucket_table) for sRGB. Checked with the screen's margin widened
500-fold (2^-18 -> 2^-9, still below half the closest thresholds' distance), so that thousands of
codes take that comparison: the bytes must stay the integer chain's. And the bucket table itself
against the float thresholds."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, _levels

from gputex.mips.intbox import BUCKET_LOW, BUCKETS, bucket_table, float_thresholds

MARGIN = "const MARGIN: f32 = 3.814697265625e-6;"


def _code_by_buckets(z: np.ndarray) -> np.ndarray:
    """bucket_code of mip_spd.wgsl in numpy (float32 z >= 0)."""
    q = np.array(float_thresholds() + (3.4e38,), np.float32)
    table = np.array(bucket_table())
    b = np.clip((z.astype(np.float32).view(np.uint32) >> 16).astype(np.int64) - BUCKET_LOW, 0, BUCKETS - 1)
    k = table[b]
    return k + ((k < 255) & (z >= q[np.minimum(k + 1, 255)]))


def test_bucket_code_is_the_float_thresholds_code():
    q = np.array(float_thresholds(), np.float32)
    rng = np.random.default_rng(3)
    z = np.concatenate([q, np.nextafter(q, np.float32(0)), np.nextafter(q, np.float32(3e9)),  # each side of each
                        (rng.random(200000) * 2.0 ** 31).astype(np.float32),
                        (2.0 ** rng.uniform(-20, 31, 200000)).astype(np.float32), np.float32([0, 2.0 ** 31])])
    want = np.searchsorted(q[1:], z, side="right")  # k with q[k] <= z < q[k + 1]
    assert np.array_equal(_code_by_buckets(z), want)


@pytest.mark.gpu
@pytest.mark.parametrize("w,h", [(256, 128), (64, 512)])
def test_doubtful_codes_decided_by_one_comparison_give_the_integer_chains_bytes(gpu, monkeypatch, w, h):
    import gputex.kernels as kernels

    load = kernels.load_wgsl

    def wide_margin(name, **subs):
        code = load(name, **subs)
        if name == "mip_spd.wgsl":
            assert MARGIN in code
            code = code.replace(MARGIN, "const MARGIN: f32 = 0.001953125;")
        return code

    import gputex.mips.spd as spd

    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)  # the GPU forms, exact_one among them, on any adapter
    monkeypatch.setattr(spd, "CODE_WORDS", False)  # (sRGB: exact_one, not the code words: test_spd_code_words.py)
    a = _image(np.random.default_rng(2100 + w), w, h, 4, 8, "holes")
    cases = [("rgba8unorm-srgb", "srgb", "weighted"), ("rgba8unorm-srgb", "srgb", "straight"),
             ("rgba8unorm", "linear", "weighted")]
    want = {c: _levels(gpu, a, c[0], c[1], c[2], "int")[1] for c in cases}
    gpu.cache(kernels.PIPELINES).items.clear()
    monkeypatch.setattr(kernels, "load_wgsl", wide_margin)
    try:
        for fmt, space, alpha in cases:
            report, got = _levels(gpu, a, fmt, space, alpha, "exact")
            assert report.precision == "integer" and report.note == ""
            for lv, (g, i) in enumerate(zip(got, want[fmt, space, alpha]), start=1):
                assert np.array_equal(g, i), f"{fmt} {alpha} level {lv}"
    finally:
        monkeypatch.undo()
        gpu.cache(kernels.PIPELINES).items.clear()
        gpu.cache("mip-spd").items.clear()  # (the self-check's verdict, made with the wide margin)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,space,alpha", [("rgba8unorm-srgb", 4, "srgb", "weighted"),
                                                      ("rgba8unorm", 4, "linear", "weighted"),
                                                      ("rg8unorm", 2, "linear", "weighted"),
                                                      ("r8unorm", 1, "linear", "straight")])
@pytest.mark.parametrize("anchor_first", [None, False])
def test_gpu_settings_give_the_integer_chains_bytes(gpu, monkeypatch, fmt, channels, space, alpha, anchor_first):
    """What GPUs run (spd.ROUND_A_LEVEL: levels 3.. a channel a thread, CHANNEL_ROUNDS; a child's
    four base texels loaded together, QUAD; the tables in workgroup memory; a first pass of
    SPLIT_FIRST levels), here on any adapter: the first pass keeping its last level's sums for the
    next, whose texels are anchored at its first level (ANCHOR_FIRST; 512x256's plan) or, as 8192^2's
    are, at its second (a texel's four children's four sums each loaded together, SUMS_QUAD); the
    integer chain's bytes."""
    import gputex.mips.spd as spd

    monkeypatch.setattr(spd, "ANCHOR_FIRST", anchor_first)
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
    monkeypatch.setattr(spd, "SMEM_TABLES", True)
    a = _image(np.random.default_rng(2200 + channels), 512, 256, channels, 8, "holes")
    report, got = _levels(gpu, a, fmt, space, alpha, "exact")
    assert report.precision == "integer" and report.note == "" and report.sources[spd.SPLIT_FIRST] == spd.SPLIT_FIRST
    # (passes of 3 and 6; anchored first 3, 5 and 1, the last level made by the hand-off from level 8)
    assert report.sources[-1] == (3 if anchor_first is False else 8)
    _, want = _levels(gpu, a, fmt, space, alpha, "int")
    for lv, (g, i) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, i), f"level {lv}"


def test_the_shaders_bucket_constants_are_the_tables():
    """mip_spd.wgsl's bucket constants are intbox's, and BUCKET_AT / BUCKET_WORDS are where and
    how long ``integer.table_words`` lays out the 8-bit sRGB bucket codes; CODE_AT where the code words
    follow them (intbox.code_words, a word a bucket: the last section), CODE_DOUBT intbox's."""
    import re

    from gputex.kernels import load_wgsl
    from gputex.mips.intbox import CODE_DOUBT, code_words
    from gputex.mips.integer import table_words

    found = re.findall(r"const ((?:BUCKET|CODE_)\w*): \w+ = (\d+)u?;", load_wgsl("mip_spd.wgsl"))
    consts = {k: int(v) for k, v in found}
    words = table_words(8, True, float_thresholds=True)
    codes = np.array(bucket_table() + (0,) * (-BUCKETS % 4), np.uint8).view(np.uint32)
    assert consts["BUCKET_LOW"] == BUCKET_LOW and consts["BUCKETS"] == BUCKETS
    assert consts["BUCKET_WORDS"] == len(codes) == -(-BUCKETS // 4)
    assert consts["BUCKET_AT"] + consts["BUCKET_WORDS"] == consts["CODE_AT"] == len(words) - BUCKETS
    assert np.array_equal(words[consts["BUCKET_AT"]:consts["CODE_AT"]], codes)
    assert np.array_equal(words[consts["CODE_AT"]:], np.array(code_words(), np.uint32))
    assert consts["CODE_DOUBT"] == CODE_DOUBT
