"""The cell chain by columns (odd.COLS, odd.COLS_BASE: mip_odd.wgsl ``level_cols`` for the
fast levels, ``cells_cols`` for a grid summed in the lanes): the chunk tables (no GPU), and on the
GPU the bytes of intbox.model_chain, with chunks of texels and cells side by side (images wider
than a workgroup's 256 columns), every texel to the exact pass or from the screen, one or several
rows a workgroup, the levels in bands; and the inner loops with paired loads (odd.PAIR_LOADS)."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image
from test_odd_fast import _approx, _assert_model, _gamma, _set, _texel_float

from gputex.errors import UsageError
from gputex.layout import mip_count
from gputex.mips.cells import cell_plan


@pytest.mark.parametrize("w,h,first", [(8191, 8191, 4), (4095, 4097, 4), (701, 45, 4), (300, 7, 3), (2, 3, 1)])
def test_chunks_cover_every_texel_and_span_at_most_a_workgroup(w, h, first):
    """Consecutive chunks from the first texel (cell) to the last, each spanning at most
    odd.COL_GROUP base columns, each as long as it can be (the next texel would not fit)."""
    import gputex.mips.odd as odd

    plan = cell_plan(w, h, mip_count(w, h), 32, 1 << 30, first)
    for st in plan.steps:
        if st.source != 0:
            continue
        start, end = odd.col_spans(plan, st)
        ch = odd._chunks(plan, st).astype(np.int64)
        assert ch[0] == 0 and ch[-1] == st.size[0] and (np.diff(ch) > 0).all()
        for j0, j1 in zip(ch[:-1], ch[1:]):
            assert end[j1 - 1] - start[j0] <= odd.COL_GROUP
            if j1 < st.size[0]:
                assert end[j1] - start[j0] > odd.COL_GROUP


def test_column_order_keeps_the_bound():
    """level_cols adds the rows of a column first, then the columns: texel_float's order on the
    transposed footprint, within the same gamma(Fx + Fy + 5) (colour) and gamma(Fx + Fy + 2)."""
    from fractions import Fraction

    rng = np.random.default_rng(7)
    for _ in range(200):
        fx, fy = rng.integers(1, 13, 2)
        texels = [[(int(rng.integers(0, 256)), int(rng.integers(0, 256))) for _ in range(fx)] for _ in range(fy)]
        wx = [int(v) for v in rng.integers(1, 0x10000, fx)]
        wy = [int(v) for v in rng.integers(1, 0x10000, fy)]
        cols = [list(c) for c in zip(*texels)]  # (the columns as rows, the weights swapped)
        n, d, num, den = _texel_float(cols, wy, wx, 8, True, True)
        assert abs(Fraction(float(n)) - num) <= _gamma(fx + fy + 5) * num
        assert abs(Fraction(float(d)) - den) <= _gamma(fx + fy + 2) * den


def test_column_order_from_a_grid_keeps_the_bound():
    """level_cols from a grid: the cells' sums by approx(), a column's rows first: each sum within
    gamma(Fx + Fy + 6), as in texel_float's order."""
    from fractions import Fraction

    rng = np.random.default_rng(8)
    f32 = np.float32
    for _ in range(200):
        fx, fy = (int(v) for v in rng.integers(1, 11, 2))
        wx = [int(v) for v in rng.integers(1, 0x10000, fx)]
        wy = [int(v) for v in rng.integers(1, 0x10000, fy)]
        most = (1 << 96) // (sum(wx) * sum(wy))
        cells = [[int(rng.integers(0, 1 << 62)) * int(rng.integers(1, 1 << 34)) % most for _ in range(fx)]
                 for _ in range(fy)]
        s = f32(0)
        for i in range(fx):
            col = f32(0)
            for j in range(fy):
                col = col + _approx(cells[j][i]) * f32(wy[j])
            s = s + col * f32(wx[i])
        num = sum(wy[j] * wx[i] * cells[j][i] for j in range(fy) for i in range(fx))
        assert abs(Fraction(float(s)) - num) <= _gamma(fx + fy + 6) * num


FORMATS = [("rgba8unorm-srgb", 4, 8, "srgb"), ("r8unorm", 1, 8, "srgb"), ("rg8unorm", 2, 8, "linear"),
           ("rgba16unorm", 4, 16, "srgb")]


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", FORMATS)
@pytest.mark.parametrize("miss_all,rows", [(False, 4), (True, 1)])
def test_levels_and_grids_by_columns_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space, miss_all, rows):
    """Levels 1-3 from the base by level_cols (several chunks a row: 1023 columns), G(4) from the base
    by cells_cols (8 bits), levels 4.. from grids by level_cols, their texels from the screen or
    every one from the exact pass (the code tables in workgroup memory, as on GPUs, or not): the
    model's bytes, both alpha modes."""
    import gputex.mips.odd as odd

    _set(monkeypatch, odd, COLS=True, COLS_BASE=True, COLS_SPAN=0, COL_ROWS=rows, CELL_COL_ROWS=rows + 2, MISS_ALL=miss_all,
         FIRST=4, INLINE_FIX=False, FUSE=False, SORTED=False, SEPARATE=True, SMEM_TABLES=not miss_all)
    w, h = 1023, 65
    a = _image(np.random.default_rng(2900 + channels * 3 + bits), w, h, channels, bits, "holes")
    _assert_model(gpu, a, fmt, space, channels, bits, [k if k >= 4 else 0 for k in range(1, mip_count(w, h))])


@pytest.mark.gpu
def test_columns_in_bands_give_the_model(gpu, monkeypatch):
    """The levels by columns in bands of a few rows (a binding limit of 2048 bytes): the model's
    bytes."""
    import gputex.mips.odd as odd

    _set(monkeypatch, odd, COLS=True, COLS_BASE=True, COLS_SPAN=0, COL_ROWS=3, FIRST=4, INLINE_FIX=False, FUSE=False, SORTED=False,
         MISS_ALL=True)
    monkeypatch.setattr(odd, "_limit", lambda session: 2048)
    a = _image(np.random.default_rng(2950), 300, 37, 4, 8, "holes")
    _assert_model(gpu, a, "rgba8unorm-srgb", "srgb", 4, 8)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,space", [FORMATS[0], FORMATS[1], FORMATS[3]])
@pytest.mark.parametrize("pairs", [True, False])
def test_paired_loads_equal_the_model(gpu, monkeypatch, fmt, channels, bits, space, pairs):
    """odd.PAIR_LOADS: the inner loops two cells at a time (level 1 by quads or a texel a thread,
    levels 2-3 from the base, G(4) from the base in the lanes with the plain colour in a second
    sweep, levels and grids from grids), codes from the screen, the levels' and grids' workgroups
    32 x 2, or 32 x 8 and 256 x 1 (odd.LEVEL_GROUP, odd.CELL_GROUP), the code tables in workgroup
    memory, only those a pass reads (L from the base, the thresholds where it rounds): the model's
    bytes."""
    import gputex.mips.odd as odd

    _set(monkeypatch, odd, PAIR_LOADS=True, COLS=False, PAIRS=pairs, FIRST=4, INLINE_FIX=False, FUSE=False,
         SORTED=False, ONE_SWEEP=False, CELLS_WIDE=True, LEVEL_GROUP=(32, 2) if pairs else (32, 8),
         CELL_GROUP=(32, 2) if pairs else (256, 1), SMEM_TABLES=True)
    w, h = 67, 41
    a = _image(np.random.default_rng(2980 + channels * 3 + bits), w, h, channels, bits, "holes")
    _assert_model(gpu, a, fmt, space, channels, bits, [k if k >= 4 else 0 for k in range(1, mip_count(w, h))])


@pytest.mark.gpu
def test_workgroups_below_the_tables_stride_are_refused(gpu, monkeypatch):
    """load_tables copies the code tables in steps of 64 invocations: a smaller workgroup would
    leave some entries unset (measured on the H200: CELL_GROUP 32 x 1 gave other bytes)."""
    import gputex
    import gputex.mips.odd as odd

    a = _image(np.random.default_rng(2990), 45, 35, 4, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, precision="fast")
    monkeypatch.setattr(odd, "CELL_GROUP", (32, 1))
    try:
        with pytest.raises(UsageError, match=r"mip workgroups of \(32, 1\) and \(\d+, \d+\): load_tables needs 64"):
            odd.odd_chain(tex, "weighted")
    finally:
        tex.destroy()


@pytest.mark.gpu
@pytest.mark.parametrize("w,h", [(1000, 999), (2047, 61), (257, 131)])
def test_what_a_gpu_runs_by_default_gives_the_models_bytes(gpu, monkeypatch, w, h):
    """Every flag as a GPU adapter resolves it (levels from a grid by columns, paired loads, 32 x 8
    and 256 x 1 workgroups, the tables a pass reads, the wide exact passes, fused small levels,
    stored levels), here on this adapter said to be a GPU: a pass by columns runs, and every
    level is the model's."""
    import dataclasses

    import gputex.mips.odd as odd

    monkeypatch.setattr(gpu, "info", dataclasses.replace(gpu.info, adapter_type="DiscreteGPU"))
    names: list[str] = []
    chain = odd.odd_chain

    def naming(tex, alpha, layer=0, measure=False, first=None, names_=None):
        return chain(tex, alpha, layer, measure, first, names)

    monkeypatch.setattr(odd, "odd_chain", naming)
    a = _image(np.random.default_rng(2600 + w + h), w, h, 4, 8, "holes")
    _assert_model(gpu, a, "rgba8unorm-srgb", "srgb", 4, 8)
    assert any(n.endswith("by columns") for n in names), names


def test_the_chunk_width_is_the_shaders():
    """odd.COL_GROUP (the chunk tables' span) is mip_odd.wgsl's COL_GROUP (its workgroup)."""
    import re

    import gputex.mips.odd as odd
    from gputex.kernels import load_wgsl

    found = re.findall(r"const COL_GROUP: u32 = (\d+)u;", load_wgsl("mip_odd.wgsl"))
    assert found == [str(odd.COL_GROUP)]
