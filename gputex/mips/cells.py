"""Pure arithmetic of the cell chain (:mod:`.odd`, ``mip_odd.wgsl``): no GPU import.

The integer box chain (:mod:`.intbox`) defines a level's texel as the exact integer sum
``S = sum(wx * wy * v)`` over its base footprint, ``wx`` the overlap of a base column with the
footprint in units of ``1 / m`` (``m``: the level's width). On one axis, with
``a0 = j * n // m``, ``r0 = j * n % m`` and ``a1, r1`` the same for ``j + 1``::

    wx(t) = m - r0 (t = a0),  m (a0 < t < a1),  r1 (t = a1),  0 elsewhere.

So the weight is constant on the single columns ``[a0, a0 + 1)`` and ``[a1, a1 + 1)`` and on
the run between them: a level's sums are weighted sums of *cell* sums, for any partition of the
axis whose cut points include ``P(m) = {a, a + 1 : a = j * n // m}`` (the level's cut points).
The chain keeps, from a first level ``s`` on, the exact sums of the cells of the grid
``G(l) = P(l) | P(l + 1) | ... | P(last)`` (on each axis; the cells are the products): level
``l``'s texels are weighted sums of ``G(l)``'s cells, and ``G(l + 1)``, a subset of its cut
points, has cells that are unions of ``G(l)``'s. About four cut points per texel of level
``l`` on an axis, so ``G(l)`` has about 16 cells per texel of level ``l``: each level reads
a grid a quarter of the size of the one before, as the power-of-two chain does, instead of
the whole base (the integer chain's odd levels). Levels before ``s`` read the base, whose
texels are the cells of the grid of every point. Same integers, same comparisons, so the
bytes of :func:`.intbox.model_chain`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FIRST_GRID", "cut_points", "Step", "CellPlan", "cell_plan"]

#: The first level read from a cell grid (levels before it read the base): ``G(2)`` has as many
#: cells as the base has texels, ``G(3)`` a quarter of them.
FIRST_GRID = 3


def _size(n: int, level: int) -> int:
    return max(1, n >> level)


def cut_points(n: int, m: int) -> np.ndarray:
    """P(m): the edges ``j * n // m`` of an axis of ``n`` texels reduced to ``m`` and the
    points one past them, within [0, n], sorted."""
    import numpy as np

    a = np.arange(m + 1, dtype=np.int64) * n // m
    return _union(a, np.minimum(a + 1, n))


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct values of two arrays (by a sort: numpy's hashed np.unique took ~1 ms a
    call here, 0.1 s for an 8191^2 plan)."""
    import numpy as np

    x = np.sort(np.concatenate([a, b]), kind="stable")
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if len(x) else x


def level_table(n: int, m: int, grid: np.ndarray | None) -> np.ndarray:
    """Per texel of the axis (n to m): (index of the cell starting at a0, index of the cell
    starting at a1, m - r0, r1) in ``grid``'s cells (None: the base's texels)."""
    import numpy as np

    j = np.arange(m, dtype=np.int64)
    a0, r0 = divmod(j * n, m)
    a1, r1 = divmod((j + 1) * n, m)
    if grid is not None:
        a0, a1 = np.searchsorted(grid, a0), np.searchsorted(grid, a1)
    return np.stack([a0, a1, m - r0, r1], -1).astype(np.uint32).ravel()


def merge_table(target: np.ndarray, grid: np.ndarray | None) -> np.ndarray:
    """Per cut point of ``target``: its index in ``grid`` (None: the base), so target cell i is
    the source cells [t[i], t[i + 1])."""
    import numpy as np

    return (target if grid is None else np.searchsorted(grid, target)).astype(np.uint32)


@dataclass(frozen=True)
class Step:
    kind: str          # "level": a level's texels; "cells": a grid's cell sums
    level: int         # the level (or the grid G(level))
    source: int        # 0: the base; k: the cells of G(k)
    size: tuple[int, int]  # texels, or cells, on each axis
    source_size: tuple[int, int]
    x_off: int         # word offsets of the axis tables in CellPlan.index
    y_off: int


@dataclass(frozen=True)
class CellPlan:
    steps: list[Step]
    index: np.ndarray  # uint32 axis tables
    extents: dict[int, int]  # per grid G(k): the most base texels a cell covers

    def sources(self) -> list[int]:
        return [s.source for s in self.steps if s.kind == "level"]


@lru_cache(maxsize=16)
def cell_plan(width: int, height: int, levels: int, cell_bytes: int, max_binding: int,
              first: int = FIRST_GRID) -> CellPlan:
    """The steps of the chain: levels before ``first`` from the base, then ``G(first)`` from the
    base, each level l from G(l) and G(l + 1) from G(l). ``first`` moves deeper until its grid's
    sums (``cell_bytes`` a cell) fit one storage binding."""
    import numpy as np

    last = levels - 1
    dims = (width, height)
    grids: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for lv in range(last, 0, -1):
        pts = [cut_points(n, _size(n, lv)) for n in dims]
        if lv < last:
            pts = [_union(p, q) for p, q in zip(pts, grids[lv + 1])]
        grids[lv] = (pts[0], pts[1])

    def cells(lv: int) -> int:
        return (len(grids[lv][0]) - 1) * (len(grids[lv][1]) - 1)

    first = max(1, first)
    while first <= last and cells(first) * cell_bytes > max_binding:
        first += 1
    tables: list[np.ndarray] = []
    offset = 0

    def table(t: np.ndarray) -> int:
        nonlocal offset
        tables.append(t)
        offset += len(t)
        return offset - len(t)

    steps = []
    for lv in range(1, levels):
        size = (_size(width, lv), _size(height, lv))
        if lv < first:  # from the base
            steps.append(Step("level", lv, 0, size, dims, table(level_table(width, size[0], None)),
                              table(level_table(height, size[1], None))))
            continue
        gx, gy = grids[lv]
        cells_size = (len(gx) - 1, len(gy) - 1)
        if lv > first:  # G(lv) from G(lv - 1)
            px, py = grids[lv - 1]
            steps.append(Step("cells", lv, lv - 1, cells_size, (len(px) - 1, len(py) - 1),
                              table(merge_table(gx, px)), table(merge_table(gy, py))))
        else:  # G(first) from the base
            steps.append(Step("cells", lv, 0, cells_size, dims, table(merge_table(gx, None)),
                              table(merge_table(gy, None))))
        steps.append(Step("level", lv, lv, size, cells_size, table(level_table(width, size[0], gx)),
                          table(level_table(height, size[1], gy))))
    index = np.concatenate(tables) if tables else np.zeros(4, np.uint32)
    extents = {lv: int(np.diff(gx).max()) * int(np.diff(gy).max())
               for lv, (gx, gy) in grids.items() if lv >= first}
    return CellPlan(steps, index.astype(np.uint32), extents)


def model_cells(codes: np.ndarray, plan: CellPlan) -> list[np.ndarray]:
    """The chain's level sums in numpy integers (object dtype, one value: a single-channel
    ``codes`` of linear values), computed the way the GPU does, for the tests: per level the
    array of exact sums (h, w)."""
    import numpy as np

    h, w = codes.shape
    cur = codes.astype(object)  # the current source: the base, or a grid's cell sums
    base = cur
    grid_sums: dict[int, np.ndarray] = {}
    out = []
    for st in plan.steps:
        src = base if st.source == 0 else grid_sums[st.source]
        xt = plan.index[st.x_off:st.x_off + (st.size[0] * 4 if st.kind == "level" else st.size[0] + 1)]
        yt = plan.index[st.y_off:st.y_off + (st.size[1] * 4 if st.kind == "level" else st.size[1] + 1)]
        if st.kind == "cells":
            xs, ys = xt.astype(np.int64), yt.astype(np.int64)
            res = np.empty(st.size[::-1], object)
            for y in range(st.size[1]):
                for x in range(st.size[0]):
                    res[y, x] = src[ys[y]:ys[y + 1], xs[x]:xs[x + 1]].sum()
            grid_sums[st.level] = res
            continue
        res = np.empty(st.size[::-1], object)
        for y in range(st.size[1]):
            wy = _weights(yt[4 * y:4 * y + 4], st.size[1])
            for x in range(st.size[0]):
                wx = _weights(xt[4 * x:4 * x + 4], st.size[0])
                res[y, x] = sum(int(a) * int(b) * src[iy, ix] for iy, a in wy for ix, b in wx)
        out.append(res)
        cur = res
    del cur
    return out


def _weights(t: np.ndarray, m: int) -> list[tuple[int, int]]:
    i0, i1, w0, r1 = (int(v) for v in t)
    return [(i, w0 if i == i0 else m) for i in range(i0, i1)] + ([(i1, r1)] if r1 else [])
