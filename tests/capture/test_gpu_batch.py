"""Grouped GPU steps (gpu_batch): the same level bytes as the per-image path, at every budget."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

import gputex
from gputex.capture import capture_texture_file
from gputex.gpu_batch import GpuSteps, _cost, plan_groups, process_group
from gputex.mips import generate_mips
from gputex.upload import upload

rng = np.random.default_rng(1313)


def test_plan_groups_keeps_order_and_budget():
    costs = [(10, 30), (5, 5), (50, 60), (1, 1), (1, 1), (200, 0), (3, 3)]
    groups = plan_groups(costs, 100)
    assert groups == [[0, 1], [2], [3, 4], [5], [6]]
    assert plan_groups([], 100) == []
    assert plan_groups([(1, 1)] * 5, 4) == [[0, 1], [2, 3], [4]]


def _images():
    """A mix of sizes (odd widths: padded rows) and pixel kinds, built here."""
    def arr(h, w, c, dtype=np.uint8):
        if dtype == np.float32:
            return rng.random((h, w, c)).astype(np.float32)
        return rng.integers(0, np.iinfo(dtype).max + 1, (h, w, c), dtype=np.int64).astype(dtype)

    return [
        gputex.from_array(arr(45, 67, 4), "srgb"),
        gputex.from_array(arr(64, 64, 4), "linear"),
        gputex.from_array(arr(9, 33, 1), "linear"),
        gputex.from_array(arr(31, 20, 4, np.uint16), "linear"),
        gputex.from_array(arr(17, 17, 4, np.float32), "linear"),
        gputex.from_array(arr(1, 300, 3), "srgb"),
    ]


def _one_by_one(gpu, images, steps):
    out = []
    for image in images:
        fmt = steps.texture_format(image, gpu)
        tex = upload(gpu, image, fmt, color_space=steps.color_space, levels=steps.levels(image),
                     premultiply=steps.premultiply, flip_y=steps.flip_y, usage=wgpu.TextureUsage.TEXTURE_BINDING)
        try:
            if tex.levels > 1:
                generate_mips(tex, filter=steps.filter, alpha=steps.alpha, wrap=steps.wrap,
                              precision=steps.precision)
            tf = capture_texture_file(tex)
        finally:
            tex.destroy()
        out.append((tf.format.name, tf.width, tf.height, tf.color_space, [bytes(lv) for lv in tf.levels]))
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("steps", [GpuSteps(), GpuSteps(flip_y=True, premultiply=True, filter="kaiser"),
                                   GpuSteps(mips=False)], ids=["box", "flip-premul-kaiser", "no-mips"])
def test_grouped_equals_per_image(gpu, steps):
    images = _images()
    want = _one_by_one(gpu, images, steps)
    costs = [_cost(im, steps.texture_format(im, gpu), steps.levels(im)) for im in images]
    mixed = plan_groups(costs, 80_000 // 2)
    assert sum(len(g) > 1 for g in mixed) >= 2 and any(sum(costs[g[0]]) > 40_000 for g in mixed if len(g) == 1)
    for budget in (1 << 30, 80_000, 1):  # one group; two pipelined groups after images alone; every image alone
        got = process_group(gpu, images, steps, budget=budget)
        assert [(tf.format.name, tf.width, tf.height, tf.color_space, [bytes(lv) for lv in tf.levels])
                for tf in got] == want, budget


@pytest.mark.gpu
def test_grouped_level0_is_the_input(gpu):
    """Independent of the per-image path: linear rgba8 level 0 is the array's own bytes, and a
    2x2 box mip of a 2x2 image whose texels are (0, 2, 4, 6) is their mean, 3."""
    a = rng.integers(0, 256, (37, 53, 4), np.uint8)
    b = np.array([[[0] * 4, [2] * 4], [[4] * 4, [6] * 4]], np.uint8)
    got = process_group(gpu, [gputex.from_array(a, "linear"), gputex.from_array(b, "linear")],
                        GpuSteps(format="rgba8unorm", alpha="straight"))
    assert bytes(got[0].levels[0]) == a.tobytes()
    assert len(got[0].levels) == 6
    assert bytes(got[1].levels[1]) == bytes([3] * 4)


@pytest.mark.gpu
def test_grouped_rejects_compressed_formats_before_any_gpu_work(gpu):
    with pytest.raises(gputex.FormatError, match="bc7-rgba-unorm is block-compressed"):
        process_group(gpu, [gputex.from_array(np.zeros((4, 4, 4), np.uint8))], GpuSteps(format="bc7-rgba-unorm"))


@pytest.mark.gpu
def test_an_image_alone_between_groups_keeps_order(gpu):
    """A group in flight is finished before an oversize image goes alone, and results keep the input order."""
    made = _images()
    images = [made[2], made[3], made[0], made[4], made[5]]  # small, small, over the share, small, small
    steps = GpuSteps()
    costs = [_cost(im, steps.texture_format(im, gpu), steps.levels(im)) for im in images]
    assert plan_groups(costs, 40_000) == [[0, 1], [2], [3, 4]]
    want = _one_by_one(gpu, images, steps)
    got = process_group(gpu, images, steps, budget=80_000)
    assert [[bytes(lv) for lv in tf.levels] for tf in got] == [w[4] for w in want]


@pytest.mark.gpu
def test_mip_levels_caps_the_chain(gpu):
    images = _images()[:3]
    steps = GpuSteps(mip_levels=3)
    got = process_group(gpu, images, steps)
    assert [len(tf.levels) for tf in got] == [3, 3, 3]
    assert [[bytes(lv) for lv in tf.levels] for tf in got] == [w[4] for w in _one_by_one(gpu, images, steps)]
