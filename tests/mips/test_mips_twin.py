"""The single-pass chain's storage twin (gputex/mips/spd.py, mip_twin.wgsl): 8-bit RGBA levels
stored into a non-sRGB twin texture and copied whole into the texture have the bytes of
``intbox.model_chain`` (the integers in Python), with every level in the twin or the pass's
smaller levels in the output buffer (a device with fewer storage texture bindings); the
conversion's self-check stores every code and reads it back, and where it disagrees (a forced
bias) the levels go through the buffer, with the report's note saying so."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image

import gputex
import gputex.mips.spd as spd
from gputex.formats import get_format
from gputex.layout import mip_count
from gputex.mips.intbox import model_chain


def _chain(gpu, a, fmt, space, alpha):
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, precision="fast")
    try:
        report = gputex.generate_mips(tex, alpha=alpha, precision="exact")
        return report, [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


def _twins_made(monkeypatch) -> list:
    """The twin path on (spd.TWIN; off by default) and the formats of the twin textures the
    chains make from now on."""
    monkeypatch.setattr(spd, "TWIN", True)
    made: list = []
    real = spd._twin_texture

    def spy(tex, twin, owned):
        made.append(twin)
        return real(tex, twin, owned)

    monkeypatch.setattr(spd, "_twin_texture", spy)
    return made


def _assert_model(got, a, space, alpha, what):
    want = model_chain(a.tolist(), 4, 8, space == "srgb", alpha == "weighted", len(got) + 1)
    for lv, (g, m) in enumerate(zip(got, want), start=1):
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{what} level {lv}: != model"


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,space,alpha", [("rgba8unorm-srgb", "srgb", "weighted"), ("rgba8unorm-srgb", "srgb", "straight"),
                                             ("bgra8unorm-srgb", "srgb", "weighted"), ("rgba8unorm", "linear", "weighted")])
@pytest.mark.parametrize("w,h", [(2, 1), (128, 64), (512, 256)])
def test_twin_levels_equal_the_model(gpu, monkeypatch, fmt, space, alpha, w, h):
    made = _twins_made(monkeypatch)
    a = _image(np.random.default_rng(2100 + w + h), w, h, 4, 8, "holes")
    report, got = _chain(gpu, a, fmt, space, alpha)
    assert report.precision == "integer" and report.note == ""
    twin = spd.twin_format(gpu, get_format(fmt))
    assert twin == fmt.replace("-srgb", "") or (fmt.startswith("bgra") and twin is None)
    assert set(made) == ({twin} if twin else set()) and (made or not twin)  # (the self-check's chain too)
    _assert_model(got, a, space, alpha, f"{fmt} {w}x{h}")


@pytest.mark.gpu
@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_fewer_twin_bindings_put_the_small_levels_in_the_buffer(gpu, monkeypatch, k):
    """A device allowing k storage textures a stage: a pass's first k levels go to the twin, the rest
    to the output buffer (k = 0: no twin at all); the bytes stay the model's."""
    made = _twins_made(monkeypatch)
    monkeypatch.setattr(spd, "twin_levels", lambda session: k)
    a = _image(np.random.default_rng(2200 + k), 512, 128, 4, 8, "holes")  # 10 levels: passes of 6 and 3
    report, got = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted")
    assert report.precision == "integer" and report.note == "" and len(got) == mip_count(512, 128) - 1
    assert set(made) == ({"rgba8unorm"} if k else set()) and (made or not k)
    _assert_model(got, a, "srgb", "weighted", f"k={k}")


def test_twin_is_off_by_default():
    """The buffer path is the default (faster on the H200, docs/performance.md)."""
    assert spd.TWIN is False


@pytest.mark.gpu
def test_failed_twin_check_keeps_the_buffer_path(gpu, monkeypatch):
    """An adapter whose unorm conversion gives another code back (forced: codes stored as
    (c + 1.25) / 255 read back as c + 1 under any rounding): the levels go through the buffer,
    the bytes are the model's, and the note says why."""
    made = _twins_made(monkeypatch)
    assert spd.twin_check(gpu, "rgba8unorm") == (True, "")
    monkeypatch.setattr(spd, "TWIN_BIAS", 1.25)
    assert spd.twin_check(gpu, "rgba8unorm") == (False, "rgba8unorm channel 0: code 0 stored, 1 read back")
    a = _image(np.random.default_rng(2300), 64, 32, 4, 8, "holes")
    report, got = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted")
    assert report.precision == "integer" and made == []
    assert report.note == (f"{gpu.name}: storing mip codes through a rgba8unorm texture failed its self-check "
                           "(rgba8unorm channel 0: code 0 stored, 1 read back); the levels went through a buffer")
    _assert_model(got, a, "srgb", "weighted", "forced disagreement")
