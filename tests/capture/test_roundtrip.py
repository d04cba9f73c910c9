"""Bit-exact round trips: every image format, the classic widths, both upload paths, bands."""

from __future__ import annotations

import numpy as np
import pytest

import gputex
from gputex.capture import capture_bytes
from gputex.convert import to_texture_rows
from gputex.formats import IMAGE_FORMATS, get_format

from factory import exact_source as _source

pytestmark = pytest.mark.gpu

WIDTHS = [1, 2, 3, 63, 64, 65, 127, 255, 256, 257, 1000, 4099]
HEIGHTS = [1, 2, 7]


@pytest.mark.parametrize("name", IMAGE_FORMATS)
def test_every_format_every_width(rng, gpu, name):
    fmt = get_format(name)
    if not gpu.has_feature(fmt.feature):
        pytest.skip(f"{gpu.name} lacks {fmt.feature}")
    for w in WIDTHS:
        for h in HEIGHTS:
            src = _source(rng, fmt, h, w)
            image = gputex.from_array(src)
            tex = gputex.upload(gpu, image, name)
            try:
                sent = to_texture_rows(image.pixels, tex.color_space, fmt)
                back = capture_bytes(tex)
                assert back.shape == (h, w * fmt.block_bytes)
                assert np.array_equal(back, sent), f"{name} {w}x{h}"
                comps = gputex.capture(tex)
                if not fmt.packed and fmt.channels == src.shape[2] and not fmt.srgb:
                    assert np.array_equal(comps.astype(np.float64), src.astype(np.float64)), f"{name} {w}x{h}"
            finally:
                tex.destroy()


@pytest.mark.parametrize("path", ["write_texture", "staging"])
@pytest.mark.parametrize("w", [1, 3, 65, 257, 1000])
def test_upload_paths_and_bands_are_exact(rng, gpu, path, w):
    h = 37
    a = rng.integers(0, 256, (h, w, 4), np.uint8)
    # a budget of ~3 rows forces many bands (and for staging a ring of two buffers)
    tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm", path=path, budget=3 * 4 * w + 600)
    try:
        assert tex.upload_path == path
        assert np.array_equal(gputex.capture(tex, budget=2 * 256 * ((4 * w + 255) // 256) * 3), a)
    finally:
        tex.destroy()


def test_rgb_gets_opaque_alpha_and_bgra_swaps(rng, gpu):
    a = rng.integers(0, 256, (5, 9, 3), np.uint8)
    tex = gputex.upload(gpu, gputex.from_array(a), "bgra8unorm")
    raw = capture_bytes(tex).reshape(5, 9, 4)
    assert np.array_equal(raw[:, :, 0], a[:, :, 2]) and np.array_equal(raw[:, :, 2], a[:, :, 0])
    assert (raw[:, :, 3] == 255).all()
    assert np.array_equal(gputex.capture(tex)[:, :, :3], a)


def test_16bit_png_through_gpu_keeps_16_bits(rng, gpu, tmp_png):
    a = rng.integers(0, 65536, (11, 65, 4), np.uint16)
    tex = gputex.upload(gpu, gputex.decode(tmp_png(a)))
    assert tex.format.name == "rgba16unorm"
    assert np.array_equal(gputex.capture(tex), a)


def test_flip_and_premultiply(rng, gpu):
    a = rng.integers(0, 256, (6, 5, 4), np.uint8)
    # linear data: multiplied as stored (sRGB content is premultiplied in linear light: test_inputs)
    tex = gputex.upload(gpu, gputex.from_array(a, "linear"), "rgba8unorm", flip_y=True, premultiply=True)
    got = gputex.capture(tex)
    want = a[::-1].astype(np.float64)
    want[:, :, :3] = np.floor(want[:, :, :3] * want[:, :, 3:] / 255 + 0.5)
    assert np.array_equal(got, want.astype(np.uint8))


def test_size_over_device_limit(gpu):
    limit = gpu.limits["max-texture-dimension-2d"]
    img = gputex.from_array(np.zeros((1, limit + 1), np.uint8), source="wide.png")
    with pytest.raises(gputex.LimitError) as e:
        gputex.upload(gpu, img)
    assert str(e.value) == f"wide.png: {limit + 1}x1 exceeds the device's max-texture-dimension-2d of {limit}"


def test_default_formats(gpu):
    from gputex.texture import default_format

    def fmt(a, space=None):
        return default_format(gputex.from_array(a), gpu, space).name

    assert fmt(np.zeros((2, 2, 3), np.uint8)) == "rgba8unorm-srgb"
    assert fmt(np.zeros((2, 2, 4), np.uint8), "linear") == "rgba8unorm"
    assert fmt(np.zeros((2, 2, 1), np.uint8)) == "r8unorm"
    assert fmt(np.zeros((2, 2, 2), np.uint8)) == "rg8unorm"
    assert fmt(np.zeros((2, 2, 3), np.uint16)) == "rgba16unorm"
    assert fmt(np.zeros((2, 2, 1), np.float32)) == "r32float"


@pytest.mark.parametrize("name", ["rgba8unorm", "r8unorm", "rgba16float", "rgb10a2unorm"])
def test_capture_levels_in_one_readback_equals_one_by_one(rng, gpu, name):
    from gputex.capture import capture_levels

    a = rng.integers(0, 256, (37, 61, 4), np.uint8)
    tex = gputex.upload(gpu, gputex.from_array(a), name, mips=True)
    levels = list(range(tex.levels))
    together = capture_levels(tex, levels, budget=4 * 256 * 20)  # level 0 alone goes the banded way
    for level, got in zip(levels, together):
        assert np.array_equal(got, gputex.capture(tex, level)), level
