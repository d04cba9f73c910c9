"""The cell chain: the integer box chain's bytes (:mod:`.integer`) for sizes whose levels do not
halve, each level read from a grid of cell sums about 16 times its size instead of from the
whole base (``mip_odd.wgsl``; the grids and why they are exact: :mod:`.cells`).

The integer chain reads the base again for every level no earlier level tiles: all 13 levels
of an 8191^2 chain. Here levels 1 and 2 read the base, the grid ``G(3)`` (3394^2 cells at
8191^2) is summed from the base once, and each later level and grid reads the grid before it:
a quarter of the cells per level. The base is read from a copy of its bytes (no textureLoad and
sRGB encode per read), runs of 8-bit texels are summed in 32-bit lanes, a grid keeps 2 words a
slot where its sums fit 64 bits, and the codes come from the single-pass chain's float screen.

Measured on the H200 (``benchmarks/mips.py --sizes 4096 8192 8191 4095x4097 --skip-cpu``, GPU
time, rgba8unorm-srgb, weighted alpha, commit 9fe8a6c; ``benchmarks/results/mips-odd-h200-9fe8a6c.txt``):
8191^2 5.81 ms against 45.4 ms for the integer chain (7.8x) and 2.39 ms for 8192^2 (2.43x);
4095x4097 1.62 ms against 12.4 ms (7.6x) and 0.652 ms for 4096^2 (2.49x). The target, 1.3x the
power-of-two time, is not reached: levels 1 and 2 and ``G(3)`` (three passes over the base, ~9
texel reads per level-1 texel, 12 products of 96-bit sums a texel) take 3.3 of the 5.8 ms, and the
~16 passes of the small levels ~15 us each. ``G(4)`` first (``benchmarks/mips_odd.py``) measured
5.64 ms, within noise of ``G(3)``.

Since then (issue 16, helper h16odd2) a level's texels no longer come from its exact 96-bit sums
first: ``level_quad`` (levels from the base, 2 x 2 texels an invocation, a shared base column or
row read once) and ``level_fast`` (levels from a grid) sum in float32, in an order whose error
is proven below the screen's margin (the shader's comment; ``tests/mips/test_odd_fast.py``), and
``screen_code`` accepts a code only where that error cannot change it; the rare texels left
(a channel within 2^-18 of a threshold) are appended to a list and made by ``level_fix`` (the
exact sums, an indirect dispatch sized by the list) before the level is copied out. A grid's
cells from the base are summed whole in the 32-bit lanes, in one sweep (on GPUs since h16odd3: the
plain colour in a second sweep where a cell's alpha sum is 0, ``ONE_SWEEP``); on CPU adapters cells (and a grid
level's texels) are made in order of their width (``SORTED``) and the code tables stay in the
storage buffer (``SMEM_TABLES``). Same bytes (308 of 308 mip hashes on lavapipe). lavapipe, CPU
time of the chain (``benchmarks/mips_cpu.py --trees MAIN . --sizes 2048 2047 1023x1025 1024``):
2047^2 561 -> 258 ms (2048^2: 222 ms, so 2.53x -> 1.16x), 1023x1025 131 -> 59 ms (1024^2: 56 ms).
On the H200 that form measured 2.11x / 2.73x the power-of-two chain (8191^2, 4095x4097,
``benchmarks/results/mips-h200-27b0bfc.txt``), hence the GPU form below.

On the H200 (issue 16, helper h16odd3; ``benchmarks/results/mips-h200-4968971.txt``, GPU time,
warm median) the chain went from 4.53 to 3.26 ms at 8191^2 (2.12x -> 1.52x the 8192^2 chain's
2.14 ms) and from 1.61 to 1.11 ms at 4095x4097 (2.74x -> 1.89x 4096^2's 0.59 ms); the 1.3x target
is missed. What changed there, each a flag measured by ``benchmarks/mips_odd.py --flags``: the
first grid is ``G(4)`` (levels 1-3 from the base by float sums; ``G(3)`` from the base cost 0.81
ms and level 3 from it 0.36), a grid's cells by 64 x 1 workgroups (``G(4)`` 0.92 -> 0.47 ms),
``level_quad`` for level 1 only, and the levels of at most 64K texels make their screen's misses
in their own pass and share one dispatch with the next grid (18 passes instead of 34). Where the
time goes now (8191^2, 3.26 ms): the passes 2.02 ms (levels 1-3 and ``G(4)`` from the base 0.44
+ 0.26 + 0.21 + 0.46 and their levels' exact passes, 0.03-0.06 each; levels 4.. 0.53), and 1.24
ms between them, most of it the copies into the texture (~1.07 ms by the texture floor; the
8192^2 chain pays them too).

Since then (issue 16, helper h16odd4; ``benchmarks/results/mips-h200-f3a0168.txt``) the exact pass
of levels of at most 1M texels makes a texel a workgroup (``level_fix_wide``, :data:`FIX_WIDE`):
8191^2 3.26 -> 3.19 ms (1.49x 8192^2), 4095x4097 1.09 -> 1.06 ms (1.79x 4096^2). The small levels in
one workgroup (:data:`TAIL`) were slower and stay off.

On a texture made for stored levels (:func:`.stored.stored_format`) each level's dispatches bind
its write view and store with ``textureStore`` (``store_texel``; no output buffers or copies, no
``tail``): H200 (helper h16store, ``benchmarks/results/mips-h200-ff3cc2c.txt``) 8191^2 3.216 ->
2.136 ms, 4095x4097 1.077 -> 0.769 ms; but 1.90x / 2.34x the power-of-two chains, which lost their
copies too (target 1.3x), and 2.43x / 2.87x once the power-of-two chain's first pass got faster
(integrated tree, ``benchmarks/results/h200-integ-59c9903.txt``). Levels 1-3 and ``G(4)`` made
from one read of the base (a tile in workgroup memory, helper h16oddbase) gave the same bytes but
took 4.08 against 1.42 ms at 8191^2 and was not merged (branch ``h16oddbase``, docs/performance.md).

Since then (issue 16, helper h16odd5; ``benchmarks/results/mips-h200-5cdd6e5.txt``, main in the
same call) the fast levels from a grid that are not made with the next grid are made by columns
(``level_cols``, :data:`COLS`: level 4 of 8191^2 0.150 -> 0.062 ms), the inner loops read two
cells at a time (:data:`PAIR_LOADS`), the levels' and cells' workgroups are larger
(:data:`LEVEL_GROUP`, :data:`CELL_GROUP`) and each pass copies only the code tables it reads:
8191^2 2.130 -> 1.941 ms (levels 1, 2, 3 and ``G(4)`` from the base 0.465 / 0.261 / 0.206 /
0.463 -> 0.431 / 0.250 / 0.200 / 0.413), 4095x4097 0.780 -> 0.730 ms: 2.21x and 2.73x the
power-of-two chains of that call (0.879 / 0.268 ms), against issue 16's 1.3x: missed. The passes
over the base by columns too (:data:`COLS_BASE`) were slower and stay off. With the faster
power-of-two chains beside them (h16tile; the integrated tree, ``h200-integ-89ac214.txt``): 8191^2
1.935 ms, 4095x4097 0.735 ms, 3.39x and 3.55x the power-of-two chains (0.571 / 0.207 ms).

The self-check (:func:`self_check`) runs once per session and kind of chain: a 45x35 chain
(base levels, a grid from the base, grids from grids) whose bytes must equal
``intbox.model_chain``'s. An adapter that disagrees gets the integer chain instead, and the
report says so.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import GPUError, UsageError
from ..layout import align_up
from .intbox import lin_table
from .integer import int_ok, slots, tables_buffer

if TYPE_CHECKING:
    from ..device import Session
    from ..formats import Format
    from ..texture import Texture
    from .cells import CellPlan, Step

__all__ = ["odd_ok", "odd_chain", "self_check", "CHECK_SIZE"]

#: Accept the float estimate of a code where it is clearly inside the code's interval, as the
#: single-pass chain does (False: every code from the exact search; the tests compare both).
SCREEN = True
#: Sum runs of 8-bit base texels in 32-bit lanes (False: in 96-bit sums; the tests compare both).
NARROW = True
#: Keep a grid's sums in 2 words a slot where they fit 64 bits (False: 3; the tests compare both).
TWO_WORDS = True
#: Read the base from a copy of its bytes where it fits one binding (False: textureLoad; the
#: tests compare both).
BASE_COPY = True
#: Levels by float sums and the screen (from the base or a grid), the texels it cannot decide by the
#: exact sums in a second pass (``level_fast`` / ``level_fix``; False: the exact sums for every
#: texel; the tests compare both).
FAST_LEVELS = True
#: Fast levels from the base 2 x 2 texels a thread (``level_quad``: a column or row they share
#: read once; False: ``level_fast``, a texel a thread; the tests compare both).
PAIRS: bool | None = None
#: None: ``level_quad`` on a CPU adapter for every fast level from the base, on others where
#: Fx + Fy is at most this (level 1 at odd sizes: quads 0.465 against 0.518 ms at 8191^2 on the
#: H200; levels 2 and 3 0.275 / 0.289 against 0.261 / 0.205 ms: a texel a thread; the chain
#: 3.27 ms, 3.37 with quads everywhere, 3.32 with none).
PAIRS_SPAN = 8
#: A grid's cells made in order of their width and height, a level from a grid's texels in order
#: of the cells they span on x (at 2047^2 cells of 1 to 8 texels side by side: a loop runs as
#: long as the widest of its neighbours'; None: on a CPU adapter, where that was measured; not
#: yet measured on a GPU, where the reads are less coherent). The tests run both.
SORTED: bool | None = None
#: Every texel of a fast level to the exact pass (the tests of that pass).
MISS_ALL = False
#: A texel the screen leaves made at once, in the fast level's own pass, by the exact sums
#: (None: on GPUs, where a rare divergent branch costs only where it is taken; lavapipe runs
#: every statement of a divergent branch for each 8 invocations, so there the list and
#: ``level_fix``). The tests run both.
#: Measured on the H200 (``benchmarks/mips_odd.py --flags``, ``benchmarks/results/mips-h200-4968971.txt``):
#: the exact sums inlined raise the kernel's registers, so big levels run ~3x slower (level 1 of
#: 8191^2 1.395 against 0.465 ms; the chain 5.04 against 3.27 ms inlined everywhere); small ones
#: lose the fix pass's launch (8191^2 3.67 ms with no level inlined). So None inlines only levels
#: of at most :data:`SMALL` texels.
INLINE_FIX: bool | None = None
#: A fast level (one band, with INLINE_FIX) and the next grid, from the same source, in one
#: dispatch (``step``; None: on GPUs, levels of at most :data:`SMALL` texels, where each pass's
#: launch and barrier outweigh the work; on big ones the pair's registers cost more). H200:
#: 8191^2 3.27 against 3.41 ms without, 4095x4097 1.12 against 1.25 ms.
FUSE: bool | None = None
SMALL = 1 << 16
#: A grid's cells from the base: the premultiplied and the plain colour summed in one sweep
#: (False: the plain in a second sweep, only where the cell's alpha sum is 0, ~6 fewer integer
#: operations a texel; None: one sweep on a CPU adapter, where a divergent branch costs as if
#: taken, two on others). The tests run both. H200: no difference (8191^2 3.26 / 3.27 ms).
ONE_SWEEP: bool | None = None
#: Each level (of one band) written to a buffer of its own, its texels left to a list of its
#: own (None: on GPUs): the passes of successive levels and the copies into the texture share
#: no written buffer, so nothing orders them but their data (one shared buffer made every
#: pass wait for the copy before it). Measured on the H200: no difference (8191^2 3.29 ms
#: without, 3.27 with): wgpu's barriers still order the passes; kept as measured.
SEPARATE: bool | None = None
#: A grid's cells made by workgroups of 64 x 1 (a SIMD group's cells share their rows: the
#: outer loop of a cell's sum is uniform), else 8 x 8 (None: 64 x 1 on GPUs; H200: G(4) of
#: 8191^2 from the base 0.47 against 0.92 ms, the chain 3.27 against 3.77 ms).
CELLS_WIDE: bool | None = None
#: The wide cells' workgroup (at least 64 invocations: ``load_tables`` copies the tables in steps of
#: 64). H200 (``benchmarks/mips_odd.py --cols``): G(4) of 8191^2 from the base 0.470 ms with 64 x 1,
#: 0.418 with 128 x 1; 4095x4097 0.147 / 0.133. 256 x 1 (a copy of the tables for 256 cells)
#: measured the same as 128 x 1 (0.411-0.418 / 0.407 ms; 0.126-0.132 / 0.130).
CELL_GROUP = (256, 1)
#: ``level_fast``'s and ``level_quad``'s workgroup (each invocation of level_quad makes 2 x 2 texels;
#: at least 64 invocations; None: 32 x 8 on GPUs, 8 x 8 on a CPU adapter). H200, 8191^2: level 1
#: 0.483 ms with 8 x 8, 0.481 with 16 x 4, 0.462 with 32 x 2, 0.464 with 64 x 1; with
#: :data:`PAIR_LOADS` 0.450 (levels 2, 3 0.254 / 0.202 against 0.262 / 0.205). 32 x 4 and 32 x 8
#: (a copy of the tables for 128 or 256 invocations, not 64) measured the same: the chain
#: 1.948 / 1.949-1.956 ms against 1.940 with 32 x 2 (4095x4097 0.735 / 0.740 / 0.741).
LEVEL_GROUP: tuple[int, int] | None = None
#: The first level read from a cell grid (None: :data:`.cells.FIRST_GRID` on a CPU adapter, 4
#: on others: there level 3 from the base by float sums beat ``G(3)`` and level 3 from it; H200
#: 8191^2: G(3) first 3.66 ms, G(4) 3.27, G(5) 3.42; 4095x4097: 1.16, 1.12, 1.27).
FIRST: int | None = None
#: The first grid on GPUs where :data:`FIRST` is None.
FIRST_GPU = 4
#: The fast levels' float sums are provably within the screen's margin while Fx + Fy (the most
#: source columns and rows a texel covers) is at most this: levels from the base, from a grid
#: (``mip_odd.wgsl``, level_fast: 2 (Fx + Fy) + 8 or + 13 roundings, at most 56).
FAST_SPAN = 24
GRID_SPAN = 21
#: 8-bit sRGB: the code tables copied into workgroup memory first (None: on every adapter but a
#: CPU one, as mips/spd.py; lavapipe: the copy and its barrier cost ~10% of a level from the base);
#: the tests force both.
SMEM_TABLES: bool | None = None
#: The small levels in one dispatch (``tail``: one workgroup makes every level from the first one
#: read from a grid with at most :data:`TAIL_TEXELS` texels to 1 x 1, and the grids between them, a
#: storage barrier a level; the grids it reads in 3 words a slot, in one buffer; None: on GPUs).
#: Measured on the H200 and not kept (``benchmarks/mips_odd.py --tail``): one workgroup is
#: latency-bound, ~30 us a round of 256 texels: levels 7-12 of 8191^2 0.764 ms against 0.116 ms in
#: six passes (the chain 3.86 against 3.28 ms), 8-12 0.226 ms; from 64 texels on (levels 10-12 /
#: 9-12) the chain within 0.03 ms of the passes' (8191^2 3.389 / 3.401 ms, 4095x4097 1.063 /
#: 1.091), no more than the copies it moves past the last pass. The tests run it.
TAIL: bool | None = False
TAIL_TEXELS = 4096
#: The exact pass (the texels a fast level's screen leaves) a workgroup a texel, its cells summed by
#: 64 invocations and its channels rounded side by side (``level_fix_wide``; None: on GPUs for
#: levels of at most :data:`WIDE_TEXELS` texels; on a CPU adapter each barrier costs). The tests
#: run both. H200 (``benchmarks/mips_odd.py --tail``): ``level_fix``'s one invocation a texel took
#: 0.03-0.06 ms a pass; wide, level 3 of 8191^2 (1M texels) 0.060 -> 0.034 ms, level 4 0.056 ->
#: 0.021, level 3 of 4095x4097 0.054 -> 0.022; but where the screen leaves many texels (a
#: workgroup each) it is slower: level 1 of 8191^2 0.032 -> 0.193 ms, level 2 0.034 -> 0.067.
FIX_WIDE: bool | None = None
WIDE_TEXELS = 1 << 20
#: The inner loops over a row's source cells (base texels) two at a time, both read first (float
#: sums in the same order; None: on GPUs; with :data:`LEVEL_GROUP` 32 x 2 a few % faster on the H200,
#: alone mixed). The tests run both.
PAIR_LOADS: bool | None = None
#: Levels by columns (``level_cols``: a workgroup of 256 takes a chunk of texels whose source
#: columns (base texels or grid cells) span at most :data:`COL_GROUP`, each invocation sums a
#: column over a row's footprint, then one a texel adds its columns; None: on GPUs) for the fast
#: levels from a grid not made with the next grid (:data:`FUSE`). The tests run both. H200
#: (``benchmarks/mips_odd.py --cols``): level 4 of 8191^2 from G(4) 0.141 -> 0.062 ms.
COLS: bool | None = None
#: ... and the passes over the base too (``level_cols`` for the fast levels from the base,
#: ``cells_cols`` for a grid summed in the lanes). Off: slower on the H200 (8191^2: levels 1, 2, 3
#: 0.485 / 0.263 / 0.207 -> 0.654 / 0.463 / 0.385 ms, G(4) 0.472 -> 0.645; one invocation in 8
#: adds the columns while the rest wait at the barrier). The tests run it.
COLS_BASE = False
#: ``level_cols`` only for fast levels whose Fx + Fy is above this (0: every one).
COLS_SPAN = 0
#: Rows of a level (cells of a grid) a ``level_cols`` (``cells_cols``) workgroup makes.
COL_ROWS = 4
CELL_COL_ROWS = 4
COL_GROUP = 256
#: Words of sums a cell keeps per slot (sums stay below 2**96: intbox.MAX_BASE_TEXELS).
_WORDS = 3


def odd_ok(tex: Texture, filter: str, normal_map: bool, coverage: float | None) -> bool:
    """Whether this chain can make ``tex``'s box mips (the integer chain's cases, sizes below
    2^16: the shader's weights are 16-bit)."""
    return int_ok(tex, filter, normal_map, coverage) and max(tex.width, tex.height) < 1 << 16


def _limit(session: Session) -> int:
    return min(int(session.limits.get("max-storage-buffer-binding-size", 128 << 20)), 1 << 30)


def _run(plan: CellPlan, st: Step) -> int:
    """The most source cells a texel (level) or cell of step ``st`` spans on the x axis."""
    import numpy as np

    if st.kind == "cells":
        return int(np.diff(plan.index[st.x_off:st.x_off + st.size[0] + 1].astype(np.int64)).max())
    t = plan.index[st.x_off:st.x_off + 4 * st.size[0]].reshape(-1, 4).astype(np.int64)
    return int((t[:, 1] - t[:, 0]).max()) + 1


def _span(plan: CellPlan, st: Step) -> int:
    """The most source cells a level's texel spans on the y axis (as :func:`_run` on x)."""
    import numpy as np

    t = plan.index[st.y_off:st.y_off + 4 * st.size[1]].reshape(-1, 4).astype(np.int64)
    return int((t[:, 1] - t[:, 0]).max()) + 1


def col_spans(plan: CellPlan, st: Step) -> tuple[Any, Any]:
    """(first, one past the last) base column of each texel (cell) of step ``st`` from the base,
    as int64 arrays: a cell's cut points, a level texel's footprint (its partial last column
    included)."""
    import numpy as np

    if st.kind == "cells":
        pts = plan.index[st.x_off:st.x_off + st.size[0] + 1].astype(np.int64)
        return pts[:-1], pts[1:]
    t = plan.index[st.x_off:st.x_off + 4 * st.size[0]].reshape(-1, 4).astype(np.int64)
    return t[:, 0], t[:, 1] + (t[:, 3] > 0)


def _chunks(plan: CellPlan, st: Step) -> Any:
    """The chunks of a level's texels (a grid's cells) whose base columns span at most
    :data:`COL_GROUP`: their first texels (cells) and one past the last, as uint32 words."""
    import numpy as np

    start, end = col_spans(plan, st)
    if int((end - start).max()) > COL_GROUP:  # (cells.py keeps every footprint within it)
        raise GPUError(f"a mip step's texels span more than {COL_GROUP} base columns")
    out, j = [0], 0
    while j < len(start):
        j = int(np.searchsorted(end, start[j] + COL_GROUP, side="right"))
        out.append(j)
    return np.array(out, np.uint32)


def _narrow_block(plan: CellPlan, st: Step, fmt: Format) -> bool:
    """Whether grid step ``st`` sums its cells whole in the 32-bit lanes (8 bits, from the base,
    at most 256 base texels a cell)."""
    return NARROW and fmt.bits == 8 and st.source == 0 and st.kind == "cells" and plan.extents[st.level] <= 256


def _fast(plan: CellPlan, st: Step) -> bool:
    """Whether level step ``st`` runs as ``level_fast`` + ``level_fix``."""
    return FAST_LEVELS and SCREEN and st.kind == "level" and \
        _run(plan, st) + _span(plan, st) <= (FAST_SPAN if st.source == 0 else GRID_SPAN)


def first_grid(session: Session) -> int:
    """The first level the chain reads from a cell grid on ``session``: :data:`FIRST`, else
    :data:`.cells.FIRST_GRID` on a CPU adapter and :data:`FIRST_GPU` on others."""
    from .cells import FIRST_GRID

    if FIRST is not None:
        return FIRST
    return FIRST_GRID if session.info.adapter_type == "CPU" else FIRST_GPU


def odd_chain(tex: Texture, alpha: str, layer: int = 0, measure: bool = False,
              first: int | None = None, names: list[str] | None = None) -> tuple[list[int], int | None, list[int]]:
    """Fill levels 1.. of ``tex`` with the cell chain. Returns (sources, gpu_ns, pass_ns): a
    level's source is 0 (the base) or k (the cells of grid G(k), :mod:`.cells`). ``names``, if
    given, gets what each timed pass makes, in order."""
    import numpy as np
    import wgpu

    from ..kernels import compute_pipeline, dispatch, submit_timed, timestamps
    from .cells import cell_plan
    from .common import integer_entries
    from .common import stand_in as stand_in_view
    from .stored import stores

    session, device, fmt = tex.session, tex.session.device, tex.format
    stored = stores(tex, alpha, "mip-odd")  # the levels stored through write views (binding 9), no copies
    cpu = session.info.adapter_type == "CPU"
    nslots = slots(fmt.channels)
    cell_bytes = nslots * _WORDS * 4  # (the plan's binding check: at most 3 words a slot)
    limit = _limit(session)
    if first is None:
        first = first_grid(session)
    plan = cell_plan(tex.width, tex.height, tex.levels, cell_bytes, limit, first)
    top = (1 << fmt.bits) - 1
    most = max(lin_table(fmt.bits, tex.color_space == "srgb")) * (top if alpha == "weighted" else 1)

    tail = _tail_start(plan) if (TAIL if TAIL is not None else not cpu) and not stored else None
    tail_grid = plan.steps[tail].level if tail is not None else 1 << 30  # (grids from it on: 3 words)

    def words(grid: int) -> int:  # a slot's words: 2 where every sum of the grid's cells fits 64 bits
        return 2 if TWO_WORDS and plan.extents[grid] * most < 1 << 64 and grid < tail_grid else 3

    consts = {"CHANNELS": fmt.channels, "BITS": fmt.bits, "SRGB": tex.color_space == "srgb",
              "SRGB_VIEW": fmt.srgb, "WEIGHTED": alpha == "weighted", "BGRA": fmt.bgra, "SCREEN": SCREEN,
              "SMEM_TABLES": fmt.bits == 8 and tex.color_space == "srgb" and (
                  SMEM_TABLES if SMEM_TABLES is not None else session.info.adapter_type != "CPU")}
    entries = integer_entries("sursrrrs")
    subs: dict[str, Any] = {}
    if stored:
        entries.append({"binding": 9, "visibility": wgpu.ShaderStage.COMPUTE, "storage_texture": {
            "access": wgpu.StorageTextureAccess.write_only, "format": tex.storage, "view_dimension": "2d"}})
        subs = {"LEVEL_OUT": "store_texel", "STORE_FORMAT": tex.storage}

    def pipeline(c: dict[str, Any], entry: str) -> tuple[Any, Any]:
        return compute_pipeline(session, "mip_odd.wgsl", entries, entry=entry, constants=c, subs=subs)
    tables = tables_buffer(session, fmt.bits, tex.color_space == "srgb", float_thresholds=True)
    bpt = fmt.block_bytes
    total = tex.width * tex.height

    def band_rows(st: Step) -> tuple[int, int]:  # (output row pitch, rows a dispatch)
        pitch = align_up(st.size[0] * bpt, 256)
        cap = min(limit, 64 << 20)
        rows = cap // pitch
        if _fast(plan, st):  # the miss list holds a word per texel of the band
            rows = min(rows, (cap - 16) // (4 * st.size[0]), 0xffff)
        return pitch, max(1, min(st.size[1], rows))

    levels = [st for st in plan.steps if st.kind == "level"]
    owned: list[Any] = []

    def buffer(size: int, usage: int, what: str) -> Any:
        b = session.check(f"{tex.source}: {what}", device.create_buffer, size=max(16, size), usage=usage)
        owned.append(b)
        return b

    def whole(b: Any) -> dict[str, Any]:
        return {"buffer": b, "offset": 0, "size": b.size}

    separate = SEPARATE if SEPARATE is not None else not cpu
    out_usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    try:
        out = buffer(16 if stored else max([band_rows(st)[0] * band_rows(st)[1] for st in levels
                                            if not separate or band_rows(st)[1] < st.size[1]] + [16]),
                     out_usage, "mip output buffer")
        stand_in = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")
        stand_in_w = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")
        stand_in_m = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")

        def wide_at(st: Step) -> bool:
            return FIX_WIDE if FIX_WIDE is not None else not cpu and st.size[0] * st.size[1] <= WIDE_TEXELS
        order = _orders(plan) if (SORTED if SORTED is not None else cpu) else {}
        table = plan.index if not order else np.concatenate([plan.index] + [t for _, t in order.values()])
        cols = COLS if COLS is not None else not cpu
        chunks: dict[tuple[str, int], tuple[int, int]] = {}  # (kind, level): (word offset, chunks)
        if cols:
            parts = [table]
            for st in plan.steps:
                if (st.kind, st.level) not in order and (st.source > 0 or COLS_BASE) and (
                        _narrow_block(plan, st, fmt) if st.kind == "cells" else
                        _fast(plan, st) and _run(plan, st) + _span(plan, st) > COLS_SPAN):
                    ch = _chunks(plan, st)
                    chunks[(st.kind, st.level)] = (sum(len(q) for q in parts), len(ch) - 1)
                    parts.append(ch)
            table = np.concatenate(parts)
        index = session.check(f"{tex.source}: mip cell tables", device.create_buffer_with_data,
                              data=table.astype(np.uint32).tobytes(), usage=wgpu.BufferUsage.STORAGE)
        owned.append(index)
        # the base's bytes in a buffer where they fit one binding: codes without textureLoad
        # and the encode of -srgb loads (every base texel is read ~5 times at 8191^2)
        pitch0 = align_up(tex.width * bpt, 256)
        copy = BASE_COPY and bool(tex.texture.usage & wgpu.TextureUsage.COPY_SRC) and pitch0 * tex.height <= limit
        base_bytes = stand_in
        if copy:
            base_bytes = buffer(pitch0 * tex.height, wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST,
                                "mip base copy")
        base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer, array_layer_count=1,
                        dimension="2d")
        fast = [st for st in levels if _fast(plan, st)]
        def inline_at(st: Step) -> bool:
            return INLINE_FIX if INLINE_FIX is not None else not cpu and st.size[0] * st.size[1] <= SMALL

        miss_usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST

        def miss_list(st: Step) -> tuple[Any, Any]:
            """(list, indirect arguments) for fast level ``st``'s texels left: [level_fix's
            workgroups, count, -, -, x | row << 16 ...]; one pair for all (not ``separate``)."""
            if not separate and shared_miss:
                return shared_miss[0]
            n = max(s.size[0] * band_rows(s)[1] for s in fast) if not separate else st.size[0] * band_rows(st)[1]
            lst = buffer(16 + 4 * n, miss_usage, "mip miss list")
            args = session.check(f"{tex.source}: mip indirect arguments", device.create_buffer_with_data,
                                 data=struct.pack("<4I", 0, 1, 1, 0),
                                 usage=wgpu.BufferUsage.INDIRECT | wgpu.BufferUsage.COPY_DST)
            owned.append(args)
            shared_miss.append((lst, args))
            return lst, args

        shared_miss: list[tuple[Any, Any]] = []

        def fuse_at(st: Step) -> bool:
            return inline_at(st) and (FUSE if FUSE is not None else not cpu and st.size[0] * st.size[1] <= SMALL)

        work = _schedule(plan, order, band_rows, fuse_at, tail)
        npasses = sum(2 if w[0] == "level" and _fast(plan, w[1]) and not inline_at(w[1]) else 1 for w in work)
        wide = CELLS_WIDE if CELLS_WIDE is not None else not cpu
        level_group = LEVEL_GROUP if LEVEL_GROUP is not None else (8, 8) if cpu else (32, 8)
        if min(CELL_GROUP[0] * CELL_GROUP[1], level_group[0] * level_group[1]) < 64:
            raise UsageError(f"mip workgroups of {CELL_GROUP} and {level_group}: load_tables needs 64 invocations")
        query = timestamps(session, npasses + 4) if measure else None
        enc = device.create_command_encoder()
        if copy:
            enc.copy_texture_to_buffer({"texture": tex.texture, "mip_level": 0, "origin": (0, 0, layer)},
                                       {"buffer": base_bytes, "offset": 0, "bytes_per_row": pitch0,
                                        "rows_per_image": tex.height}, (tex.width, tex.height, 1))
        grids: dict[int, object] = {}

        def consts_of(st: Step) -> dict[str, Any]:
            return dict(consts, FROM_BASE=st.source == 0, MISS_ALL=MISS_ALL, SORTED=(st.kind, st.level) in order,
                        BASE_BUFFER=copy, WORDS_IN=words(st.source) if st.source else 3,
                        WORDS_OUT=words(st.level) if st.kind == "cells" else 3, INLINE_FIX=inline_at(st),
                        NARROW=NARROW and fmt.bits == 8 and st.source == 0 and _run(plan, st) <= 256,
                        NARROW_BLOCK=_narrow_block(plan, st, fmt), ONE_SWEEP=ONE_SWEEP if ONE_SWEEP is not None else cpu,
                        FIX_WIDE=wide_at(st), PAIR_LOADS=PAIR_LOADS if PAIR_LOADS is not None else not cpu)

        layout = _tail_layout(plan, tail, nslots, bpt) if tail is not None else None

        def grid_buffer(st: Step) -> Any:
            size = layout.grid_words * 4 if layout and st.level == tail_grid else \
                st.size[0] * st.size[1] * nslots * words(st.level) * 4
            grids[st.level] = buffer(size, wgpu.BufferUsage.STORAGE, "mip cell sums")
            return grids[st.level]

        views: dict[int, Any] = {}

        def bind_group(bgl: Any, prm: bytes, src: Any, dst: Any, miss: Any = stand_in_m, o: Any = out,
                       level: int = 0) -> Any:
            """The bind group of a dispatch; ``level``: the level it writes (stored: its view)."""
            extra = []
            if stored:
                if level and level not in views:
                    views[level] = tex.storage_view(level, layer)
                extra = [views[level] if level else stand_in_view(session, "storage", tex.storage)]
            return device.create_bind_group(layout=bgl, entries=[
                {"binding": i, "resource": r} for i, r in enumerate(
                    [base, whole(o), {"buffer": session.uniform(prm)}, whole(src), whole(dst), whole(tables),
                     whole(index), whole(base_bytes), whole(miss)] + extra)])

        def level_out(st: Step, pitch: int, rows: int) -> Any:
            if separate and rows >= st.size[1] and not stored:
                return buffer(pitch * rows, out_usage, "mip output buffer")
            return out

        def to_texture(o: Any, st: Step, pitch: int, r0: int, n: int, offset: int = 0) -> None:
            if stored:  # (the levels are in the texture already)
                return
            enc.copy_buffer_to_texture({"buffer": o, "offset": offset, "bytes_per_row": pitch, "rows_per_image": n},
                                       {"texture": tex.texture, "mip_level": st.level, "origin": (0, r0, layer)},
                                       (st.size[0], n, 1))

        # separate: every level's miss list emptied up front, and a level's copy into the texture
        # issued after the next pass (a clear or a copy between two passes puts a barrier there
        # that waits for all earlier work: so a level's exact pass runs beside the next level's)
        lists = {}
        if separate:
            for job in work:
                if job[0] == "level" and _fast(plan, job[1]) and not inline_at(job[1]):
                    lists[(job[1].level, job[2])] = lst = miss_list(job[1])
                    enc.clear_buffer(lst[0], 0, 16)
        pending: list[tuple[Any, Step, int, int, int]] = []

        def flush() -> None:
            for p in pending:
                to_texture(*p)
            pending.clear()

        def copy_out(o: Any, st: Step, pitch: int, r0: int, n: int) -> None:
            if o is out:
                to_texture(o, st, pitch, r0, n)
            else:
                pending.append((o, st, pitch, r0, n))

        for i, job in enumerate(work):
            if i == len(work) - 1:
                flush()  # (the chain's figure, first pass to last, holds every copy but the last's)
            if job[0] == "tail" and layout is not None:  # the small levels, one workgroup
                pipe, bgl = compute_pipeline(session, "mip_odd.wgsl", entries, entry="tail", subs=TAIL_SUBS, constants=dict(
                    consts, FROM_BASE=False, MISS_ALL=MISS_ALL, SORTED=False, BASE_BUFFER=copy, WORDS_IN=3,
                    WORDS_OUT=3, INLINE_FIX=True, NARROW=False, NARROW_BLOCK=False, ONE_SWEEP=True))
                parts = session.check(f"{tex.source}: mip tail parameters", device.create_buffer_with_data,
                                      data=layout.params(plan, total, nslots, pitch0), usage=wgpu.BufferUsage.STORAGE)
                owned.append(parts)
                o = buffer(layout.out_bytes, out_usage, "mip output buffer")
                if bpt < 4:
                    enc.clear_buffer(o, 0, layout.out_bytes)
                bind = bind_group(bgl, _params(0, 0, 0, 0, 0, len(layout.levels)), parts, grids[tail_grid], o=o)
                dispatch(enc, pipe, bind, (1, 1, 1), query.next() if query else None)
                flush()
                for lv, _, off, pitch in layout.levels:
                    to_texture(o, lv, pitch, 0, lv.size[1], off)
                if names is not None:
                    names.append(f"levels {tail_grid}-{tex.levels - 1} from G({tail_grid}), one workgroup")
                continue
            st = job[1]
            src = grids[st.source] if st.source else stand_in
            c = consts_of(st)
            if job[0] == "cells":
                dst = grid_buffer(st)
                by_cols = ("cells", st.level) in chunks
                first, second = order.get(("cells", st.level), ((0, 0), None))[0]
                if by_cols:  # (word 12: the pass's first chunk in the chunk table)
                    first, nch = chunks[("cells", st.level)]
                prm = _params(*st.source_size, *st.size, 0, st.size[1], 0, total, nslots,
                              st.x_off, st.y_off, pitch0, first, second, 0, 0, 0, 0, 0, 0)
                gw, gh = CELL_GROUP if wide else (8, 8)
                if by_cols:
                    pipe, bgl = pipeline(dict(c, COL_ROWS=CELL_COL_ROWS), "cells_cols")
                    grid = (nch, -(-st.size[1] // CELL_COL_ROWS), 1)
                else:
                    pipe, bgl = pipeline(dict(c, CELL_X=gw, CELL_Y=gh), "cells")
                    grid = (-(-st.size[0] // gw), -(-st.size[1] // gh), 1)
                dispatch(enc, pipe, bind_group(bgl, prm, src, dst), grid, query.next() if query else None)
                flush()
                if names is not None:
                    names.append(f"G({st.level}) from {_source_name(st)}" + (" by columns" if by_cols else ""))
                continue
            w, h = st.size
            pitch = band_rows(st)[0]
            is_fast = _fast(plan, st)
            inline = inline_at(st)
            pair = is_fast and st.source == 0 and (
                PAIRS if PAIRS is not None else cpu or _run(plan, st) + _span(plan, st) <= PAIRS_SPAN)
            step = 16 if pair else 8  # (level_quad: 2 x 2 texels an invocation; step's workgroups 8 x 8)
            gx_, gy_ = level_group if job[0] == "level" and is_fast else (8, 8)
            qx, qy = (2 * gx_, 2 * gy_) if pair else (gx_, gy_)
            if job[0] == "step":  # the level and the next grid, one dispatch
                nx = job[2]
                dst = grid_buffer(nx)
                cn = consts_of(nx)
                c = dict(c, NARROW=c["NARROW"] and cn["NARROW"], NARROW_BLOCK=cn["NARROW_BLOCK"],
                         WORDS_OUT=cn["WORDS_OUT"], STEP_QUAD=pair)
                gx, gy = -(-w // step), -(-h // step)
                prm = _params(*st.source_size, w, h, 0, h, pitch // 4, total, nslots,
                                  st.x_off, st.y_off, pitch0, 0, 0, *nx.size, nx.x_off, nx.y_off, gx, gy)
                pipe, bgl = pipeline(c, "step")
                o = level_out(st, pitch, h)
                if bpt < 4 and not stored:
                    enc.clear_buffer(o, 0, pitch * h)
                dispatch(enc, pipe, bind_group(bgl, prm, src, dst, o=o, level=st.level),
                         (max(gx, -(-nx.size[0] // 8)), gy + -(-nx.size[1] // 8), 1), query.next() if query else None)
                flush()
                copy_out(o, st, pitch, 0, h)
                if names is not None:
                    names.append(f"level {st.level} + G({nx.level}) from {_source_name(st)}")
                continue
            r0, n = job[2], job[3]
            by_cols = is_fast and ("level", st.level) in chunks
            pipe, bgl = pipeline(dict(c, COL_ROWS=COL_ROWS) if by_cols else dict(
                c, LEVEL_X=level_group[0], LEVEL_Y=level_group[1]) if is_fast else c, "level_cols" if by_cols else
                                 "level_quad" if pair else "level_fast" if is_fast else "level")
            first, second = order.get(("level", st.level), ((0, 0), None))[0]
            grid = (-(-w // qx), -(-n // qy), 1)
            if by_cols:  # (word 12: the pass's first chunk in the chunk table)
                first, nch = chunks[("level", st.level)]
                grid = (nch, -(-n // COL_ROWS), 1)
            prm = _params(*st.source_size, w, h, r0, n, pitch // 4, total, nslots,
                          st.x_off, st.y_off, pitch0, first, second, 0, 0, 0, 0, 0, 0)
            misses, args = (stand_in_m, None) if not is_fast or inline else \
                lists[(st.level, r0)] if separate else miss_list(st)
            o = level_out(st, pitch, n)
            bind = bind_group(bgl, prm, src, stand_in_w, misses, o, st.level)
            if bpt < 4 and not stored:
                enc.clear_buffer(o, 0, pitch * n)
            if is_fast and not inline and not separate:
                enc.clear_buffer(misses, 0, 16)
            dispatch(enc, pipe, bind, grid, query.next() if query else None)
            flush()
            if names is not None:
                names.append(f"level {st.level} from {_source_name(st)}" + (f" rows {r0}-{r0 + n - 1}" if n < h else "")
                             + (" by columns" if by_cols else ""))
            if is_fast and not inline:  # the texels left, as many workgroups as level_fast counted
                enc.copy_buffer_to_buffer(misses, 0, args, 0, 4)
                fix, _ = pipeline(c, "level_fix_wide" if wide_at(st) else "level_fix")
                _dispatch_indirect(enc, fix, bind, args, query.next() if query else None)
                if names is not None:
                    names.append(f"level {st.level} exact pass")
            copy_out(o, st, pitch, r0, n)
        flush()
        gpu_ns, pass_ns = submit_timed(session, enc, query, f"{tex.source}: mip chain (integer, cells)")
    finally:
        for b in owned:
            b.destroy()
    return plan.sources(), gpu_ns, pass_ns


Job = tuple[Any, ...]


def _schedule(plan: CellPlan, order: dict[tuple[str, int], Any], band_rows: Any, fuse: Any,
              tail: int | None = None) -> list[Job]:
    """The chain's dispatches in order: ("cells", grid step), ("level", level step, first row,
    rows) a band, or ("step", level step, grid step): a fast level of one band and the next grid
    from the same source (where ``fuse(level step)``); last ("tail", i): the steps from
    ``plan.steps[i]`` on in one dispatch (``tail``, not None)."""
    work: list[Job] = []
    skip = None
    steps = plan.steps[:tail] if tail is not None else plan.steps
    for i, st in enumerate(steps):
        if st is skip:
            continue
        nx = steps[i + 1] if i + 1 < len(steps) else None
        if st.kind == "cells":
            work.append(("cells", st))
            continue
        rows = band_rows(st)[1]
        if (fuse(st) and nx is not None and nx.kind == "cells" and nx.source == st.source and _fast(plan, st)
                and rows >= st.size[1] and ("level", st.level) not in order and ("cells", nx.level) not in order):
            work.append(("step", st, nx))
            skip = nx
            continue
        work.extend(("level", st, r0, min(rows, st.size[1] - r0)) for r0 in range(0, st.size[1], rows))
    if tail is not None:
        work.append(("tail", tail))
    return work


#: ``tail``'s source: its Params from src_cells, every grid read and written in dst_cells.
TAIL_SUBS = {"PRM": "P", "SRC_CELLS": "dst_cells", "SRC_OFF": "P.src_off", "DST_OFF": "P.dst_off",
             "OUT_OFF": "P.out_off"}


def _params(*words: int) -> bytes:
    """``mip_odd.wgsl``'s Params: the words given, the rest 0."""
    return struct.pack("<24I", *words, *[0] * (24 - len(words)))


def _tail_start(plan: CellPlan) -> int | None:
    """The index in ``plan.steps`` of the first level the tail makes: the first read from a grid
    with at most :data:`TAIL_TEXELS` texels (the levels after it are smaller)."""
    return next((i for i, st in enumerate(plan.steps) if st.kind == "level" and st.source > 0
                 and st.size[0] * st.size[1] <= TAIL_TEXELS), None)


@dataclass(frozen=True)
class TailLayout:
    """Where ``tail`` keeps things: every grid from the first it reads on in one buffer of 3-word
    slots (``grid_offsets``: words), each level's rows at a 256-byte aligned offset of its output
    buffer; ``levels``: (level step, the next grid's step or None, byte offset, row pitch)."""
    grid_offsets: dict[int, int]
    grid_words: int
    levels: list[tuple[Step, Step | None, int, int]]
    out_bytes: int

    def params(self, plan: CellPlan, total: int, nslots: int, base_pitch: int) -> bytes:
        """The Params of each level (``mip_odd.wgsl``, 24 words each)."""
        out = b""
        for lv, nx, off, pitch in self.levels:
            cell = (*nx.size, nx.x_off, nx.y_off) if nx else (0, 0, 0, 0)
            out += _params(*lv.source_size, *lv.size, 0, lv.size[1], pitch // 4, total, nslots, lv.x_off, lv.y_off,
                           base_pitch, 0, 0, *cell, 0, 0, self.grid_offsets[lv.source],
                           self.grid_offsets[nx.level] if nx else 0, off // 4, int(_fast(plan, lv)))
        return out


def _tail_layout(plan: CellPlan, start: int, nslots: int, bpt: int) -> TailLayout:
    steps = plan.steps[start:]
    first = plan.steps[start - 1]  # (the grid the first level reads)
    offsets, words = {first.level: 0}, first.size[0] * first.size[1] * nslots * 3
    levels, out = [], 0
    for i, st in enumerate(steps):
        if st.kind == "cells":
            offsets[st.level] = words
            words += st.size[0] * st.size[1] * nslots * 3
            continue
        nx = steps[i + 1] if i + 1 < len(steps) else None
        pitch = align_up(st.size[0] * bpt, 256)
        levels.append((st, nx, out, pitch))
        out += pitch * st.size[1]
    return TailLayout(offsets, words, levels, out)


def _source_name(st: Step) -> str:
    return "the base" if st.source == 0 else f"G({st.source})"


def _orders(plan: CellPlan) -> dict[tuple[str, int], tuple[tuple[int, int], Any]]:
    """Per grid made and level from a grid ((kind, level)): ((x offset, y offset) in the index
    buffer after ``plan.index``, the cells of each axis in order of their width (stable), or a
    level's texels in order of the source cells they span on x, as uint32 words)."""
    import numpy as np

    out: dict[tuple[str, int], tuple[tuple[int, int], Any]] = {}
    offset = len(plan.index)
    for st in plan.steps:
        if st.kind == "level":  # from a grid: the texels of a row in order of the cells they span
            if st.source == 0:
                continue
            t = plan.index[st.x_off:st.x_off + 4 * st.size[0]].reshape(-1, 4).astype(np.int64)
            perms = [np.argsort(t[:, 1] - t[:, 0] + (t[:, 3] > 0), kind="stable"), np.zeros(0, np.int64)]
        else:
            perms = [np.argsort(np.diff(plan.index[off:off + n + 1].astype(np.int64)), kind="stable")
                     for off, n in ((st.x_off, st.size[0]), (st.y_off, st.size[1]))]
        out[(st.kind, st.level)] = ((offset, offset + len(perms[0])), np.concatenate(perms).astype(np.uint32))
        offset += len(perms[0]) + len(perms[1])
    return out


def _dispatch_indirect(enc: Any, pipe: Any, bind: Any, args: Any, timestamp_writes: dict[str, Any] | None) -> None:
    """One compute pass of ``pipe`` over the workgroups that ``args`` (x, y, z) holds."""
    cpass = enc.begin_compute_pass(timestamp_writes=timestamp_writes) if timestamp_writes else enc.begin_compute_pass()
    cpass.set_pipeline(pipe)
    cpass.set_bind_group(0, bind)
    cpass.dispatch_workgroups_indirect(args, 0)
    cpass.end()


#: The self-check's image: levels from the base, a grid from the base and grids from grids.
CHECK_SIZE = (45, 35)


def self_check(session: Session, fmt: Format, color_space: str, alpha: str, storage: str = "") -> tuple[bool, str]:
    """Once per session and kind of chain: this chain's bytes for a 45x35 image must be those of
    ``intbox.model_chain``. Returns (passed, what differed). ``storage``: the texture's levels
    are stored through it (:func:`.stored.checked`: the stored chain checked first, the buffer's
    where it disagrees)."""
    from ..layout import mip_count
    from .integer import matches_model
    from .stored import checked

    w, h = CHECK_SIZE
    return checked(session, fmt, color_space, alpha, storage, "mip-odd",
                   lambda st: matches_model(session, fmt, color_space, alpha, odd_chain, CHECK_SIZE, mip_count(w, h),
                                            storage=st))
