"""Captures planned as grouped copies: the packing arithmetic, the threaded copy-out, and
whole textures read back at every budget equal to the bytes the test put in."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import gputex
from gputex.formats import get_format
from gputex.layout import copy_layout, mip_size

cap = importlib.import_module("gputex.capture")  # the module; gputex.capture is also the function
rng = np.random.default_rng(13)


class _Fake:
    """What the planner reads of a texture: its format, size and per-level layout."""

    def __init__(self, fmt: str, w: int, h: int):
        self.format, self.width, self.height = get_format(fmt), w, h

    def layout(self, level: int):
        return copy_layout(self.format, *mip_size(self.width, self.height, level))


@pytest.mark.parametrize("fmt,w,h,layers,limit", [
    ("rgba8unorm", 61, 37, 3, 256 * 40),  # several layers per copy at small levels, bands at level 0
    ("r8unorm", 1000, 7, 5, 1024),  # one row of level 0 is 1024 padded bytes: one-row bands
    ("rgba16float", 5, 300, 1, 1 << 20),  # everything in one group
    ("bc7-rgba-unorm", 37, 21, 2, 512),  # block rows
])
def test_pieces_cover_every_row_once_and_groups_respect_the_limit(fmt, w, h, layers, limit):
    tex = _Fake(fmt, w, h)
    levels = max(w, h).bit_length()
    pieces, rows = [], {}
    for level in range(levels):
        lay = tex.layout(level)
        dst = np.zeros((layers * lay.blocks_down, lay.bytes_per_row), np.uint8)
        rows[level] = dst
        pieces += cap._pieces(tex, level, 0, layers, dst, limit)
    groups = cap.copy_groups(pieces, limit)
    assert [p for g in groups for p in g] == pieces
    for g in groups:
        ends = 0
        for p in g:
            assert p.offset % 256 == 0 and p.offset >= ends
            ends = p.offset + p.size
        one_row = len(g) == 1 and g[0].nz == 1 and g[0].y1 - g[0].y0 == 1
        assert cap.group_bytes(g) <= limit or one_row
    for level, dst in rows.items():  # mark each piece's rows; each must be hit exactly once
        lay = tex.layout(level)
        hits = np.zeros(layers * lay.blocks_down, np.int64)
        for p in pieces:
            if p.level == level:
                assert p.dst.base is dst or p.dst.base is dst.base or np.shares_memory(p.dst, dst)
                start = (p.z0 * lay.blocks_down + p.y0)
                assert p.dst.shape == (p.nz * (p.y1 - p.y0), lay.bytes_per_row)
                assert p.nz == 1 or (p.y0, p.y1) == (0, lay.blocks_down)
                hits[start: start + p.nz * (p.y1 - p.y0)] += 1
        assert (hits == 1).all(), level


@pytest.mark.parametrize("threads", [1, 3, 8])
def test_copy_tasks_unpad_every_piece(monkeypatch, threads):
    """The copy-out, cut into runs of rows across pieces, writes exactly the tight bytes."""
    import gputex.parallel

    monkeypatch.setattr(gputex.parallel, "MIN_CHUNK_BYTES", 64)
    tex = _Fake("rgba8unorm", 45, 19)
    dsts, pieces = [], []
    for level in range(3):
        lay = tex.layout(level)
        d = np.zeros((2 * lay.blocks_down, lay.bytes_per_row), np.uint8)
        dsts.append(d)
        pieces += cap._pieces(tex, level, 0, 2, d, 256 * 7)
    groups = cap.copy_groups(pieces, 1 << 20)
    assert len(groups) == 1
    mapped = rng.integers(0, 256, cap.group_bytes(groups[0]), np.uint8)
    tasks = cap._copy_tasks(groups[0], mapped, threads)
    assert len(tasks) >= (1 if threads == 1 else 2)
    gputex.parallel.run_all(tasks, threads)
    for p in pieces:
        rows, width = p.dst.shape
        want = mapped[p.offset: p.offset + p.size].reshape(rows, p.pitch)[:, :width]
        assert np.array_equal(p.dst, want)


def _filled(gpu, name, w, h, layers, levels):
    """A texture whose every level and layer holds random bytes the test keeps."""
    from gputex.convert import to_texture_rows
    from gputex.texture import create_texture
    from gputex.upload import write_image

    fmt = get_format(name)
    tex = create_texture(gpu, fmt, w, h, layers=layers, levels=levels, color_space="linear")
    want = []
    for level in range(levels):
        lw, lh = mip_size(w, h, level)
        rows = []
        for z in range(layers):
            if fmt.kind == "float":
                a = rng.random((lh, lw, 4)).astype(np.float16).astype(np.float32)
            else:
                a = rng.integers(0, 256, (lh, lw, fmt.channels), np.uint8)
            write_image(tex, gputex.from_array(a, "linear"), level=level, layer=z)
            rows.append(to_texture_rows(a, "linear", fmt).tobytes())
        want.append(b"".join(rows))
    return tex, want


@pytest.mark.gpu
@pytest.mark.parametrize("name,w,h,layers", [("rgba8unorm", 67, 45, 3), ("r8unorm", 301, 5, 2),
                                             ("rgba16float", 33, 70, 1)])
@pytest.mark.parametrize("budget", [1024, 256 * 64, 64 << 20])
def test_texture_file_capture_equals_what_was_written(gpu, name, w, h, layers, budget):
    levels = max(w, h).bit_length()
    tex, want = _filled(gpu, name, w, h, layers, levels)
    try:
        tf = cap.capture_texture_file(tex, budget=budget)
        assert [bytes(lv) for lv in tf.levels] == want
        part = cap.capture_texture_file(tex, budget=budget, levels=[levels - 1, 1])
        assert [bytes(lv) for lv in part.levels] == [want[levels - 1], want[1]]
        for z in range(layers):  # one layer of one level, and levels of one layer
            n = len(want[0]) // layers
            assert cap.capture_bytes(tex, 0, z, budget=budget).tobytes() == want[0][z * n: (z + 1) * n]
    finally:
        tex.destroy()


@pytest.mark.gpu
def test_capture_levels_into_arrays_equals_what_was_written(gpu):
    tex, want = _filled(gpu, "rgba8unorm", 129, 40, 2, 8)
    made = {}

    def into(level, shape, dtype):
        made[level] = np.full(shape, 7, dtype)
        return made[level]

    try:
        for budget in (2048, 64 << 20):
            got = cap.capture_levels(tex, [0, 3, 7], layer=1, budget=budget, into=into)
            for level, a in zip([0, 3, 7], got):
                assert a is made[level]
                n = len(want[level]) // 2
                assert a.tobytes() == want[level][n:]
    finally:
        tex.destroy()


@pytest.mark.gpu
def test_capture_of_a_missing_level_names_it(gpu):
    tex, _ = _filled(gpu, "rgba8unorm", 8, 8, 1, 2)
    try:
        with pytest.raises(gputex.LimitError, match=r"level 2 does not exist \(texture has 2\)"):
            cap.capture_texture_file(tex, levels=[0, 2])
    finally:
        tex.destroy()



def test_fresh_bytes_holds_what_was_written():
    import sys

    for n in (0, 1, 4097, 3 << 20):
        data, view = cap.fresh_bytes(n)
        want = rng.integers(0, 256, n, np.uint8)
        view[:] = want
        assert len(data) == n and data == want.tobytes() and hash(bytes(data)) == hash(want.tobytes())
        if sys.implementation.name == "cpython" and n:
            assert type(data) is bytes  # the KTX2 writer takes bytes without another copy
