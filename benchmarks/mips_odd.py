"""The cell chain (gputex/mips/odd.py) per pass: for each first grid level, or each setting of its
flags, same run and same texture.

    python benchmarks/mips_odd.py [SIZE ...]            (default: 8191 4095x4097)
    python benchmarks/mips_odd.py --flags [SIZE ...]    (odd.py's flags instead of the first grid)
    python benchmarks/mips_odd.py --tail [SIZE ...]     (the passes' order and the small levels' dispatch)
    python benchmarks/mips_odd.py --cols [SIZE ...]     (the passes by columns: COLS and its settings)
    python benchmarks/mips_odd.py --groups [SIZE ...]   (the workgroups of the levels and cells)

Prints, per size (rgba8unorm-srgb, weighted alpha, random codes, 40% of the texels transparent as
in the hash matrix) and first grid ``G(k)`` (levels before k read the base;
``gputex/mips/cells.py``), or per setting of the flags (``--flags``: the adapter's defaults, then
one flag flipped at a time: FIX_WIDE, INLINE_FIX, FUSE, CELLS_WIDE, FIRST, SEPARATE, ONE_SWEEP,
PAIRS, SORTED, SMEM_TABLES; ``--tail``: the defaults, FIX_WIDE off and everywhere, TAIL with
TAIL_TEXELS 64 and 1024), the chain's GPU time (timestamp queries, median of 5, each queued behind
``mips.py``'s warm-up dispatches; from the first pass's begin to the last's end, so the copies into
the texture between passes count), whether its bytes equal those of the first row, and every pass
by name with its time (``odd_chain(names=)``: a level, a grid ``G(k)``, a level and the next grid
in one dispatch, a level's exact pass, ``level_fix``). The whole-chain comparison with the
power-of-two sizes and the multi-pass integer chain is ``benchmarks/mips.py``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from mips import SpeedOfLight  # noqa: E402  (benchmarks/mips.py: the GPU kept busy, clocks up)

import gputex  # noqa: E402
import gputex.mips.odd as odd  # noqa: E402


def _settings(gpu: gputex.Session, flags: str) -> list[tuple[str, dict]]:
    cpu = gpu.info.adapter_type == "CPU"
    tail = [("defaults", {}), ("FIX_WIDE=False", {"FIX_WIDE": False}), ("FIX_WIDE=True", {"FIX_WIDE": True}),
            ("TAIL=True TAIL_TEXELS=64", {"TAIL": True, "TAIL_TEXELS": 64}),
            ("TAIL=True TAIL_TEXELS=1024", {"TAIL": True, "TAIL_TEXELS": 1024})]
    if flags == "--tail":
        return tail
    if flags == "--groups":  # (the last call of helper h16odd5)
        return [("defaults", {}), ("LEVEL_GROUP=(32, 2) CELL_GROUP=(128, 1)", {"LEVEL_GROUP": (32, 2), "CELL_GROUP": (128, 1)}),
                ("LEVEL_GROUP=(32, 4)", {"LEVEL_GROUP": (32, 4)}), ("defaults again", {})]
    if flags == "--cols":  # (first call of helper h16odd5: COLS_BASE, COLS_SPAN, COL_ROWS, CELL_COL_ROWS)
        return [("defaults", {}), ("COLS=False", {"COLS": False}), ("PAIR_LOADS=True", {"PAIR_LOADS": True}),
                ("LEVEL_GROUP=(16, 4)", {"LEVEL_GROUP": (16, 4)}), ("LEVEL_GROUP=(32, 2)", {"LEVEL_GROUP": (32, 2)}),
                ("LEVEL_GROUP=(64, 1)", {"LEVEL_GROUP": (64, 1)}), ("CELL_GROUP=(32, 1)", {"CELL_GROUP": (32, 1)}),
                ("CELL_GROUP=(128, 1)", {"CELL_GROUP": (128, 1)}),
                ("PAIR_LOADS=True LEVEL_GROUP=(32, 2)", {"PAIR_LOADS": True, "LEVEL_GROUP": (32, 2)}),
                ("COLS_BASE=True", {"COLS_BASE": True}), ("defaults again", {})]
    if not flags:
        return [(f"first {k}", {"first": k}) for k in (3, 4, 5, 2)]
    return tail[:3] + [("INLINE_FIX=True FUSE=True", {"INLINE_FIX": True, "FUSE": True}),
            ("INLINE_FIX=False", {"INLINE_FIX": False}), ("FUSE=False", {"FUSE": False}),
            (f"CELLS_WIDE={cpu}", {"CELLS_WIDE": cpu}), ("FIRST=3", {"FIRST": 3}), ("FIRST=5", {"FIRST": 5}),
            ("as before: FIRST=3 INLINE_FIX=False FUSE=False CELLS_WIDE=False",
             {"FIRST": 3, "INLINE_FIX": False, "FUSE": False, "CELLS_WIDE": False}),
            (f"SEPARATE={cpu}", {"SEPARATE": cpu}),
            (f"ONE_SWEEP={not cpu}", {"ONE_SWEEP": not cpu}), ("PAIRS=True", {"PAIRS": True}), ("PAIRS=False", {"PAIRS": False}),
            (f"SORTED={not cpu}", {"SORTED": not cpu}),
            (f"SMEM_TABLES={cpu}", {"SMEM_TABLES": cpu})]


def main(sizes: list[str], flags: str) -> None:
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}")
    for size in sizes:
        w, _, h = size.partition("x")
        width, height = int(w), int(h or w)
        rng = np.random.default_rng(1)
        a = rng.integers(0, 256, (height, width, 4), np.uint8)
        a[..., 3] = np.where(rng.random((height, width)) < 0.4, 0, a[..., 3])
        # made as the CLI makes it (stored levels where the adapter's exact chain stores them)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, store_levels=True)
        from gputex.mips.stored import stores
        print(f"{size}: levels stored: {stores(tex, 'weighted', 'mip-odd')}", flush=True)
        first_bytes = None
        sol = SpeedOfLight(gpu, tex) if gpu.has_feature("timestamp-query") else None
        if sol:
            sol.warm()
        for name, setting in _settings(gpu, flags):
            first = setting.pop("first", None)
            saved = {k: getattr(odd, k) for k in setting}
            for k, v in setting.items():
                setattr(odd, k, v)
            try:
                odd.odd_chain(tex, "weighted", first=first)  # pipelines
                if sol:
                    sol.warm()  # (again: the clocks drop while the CPU compiles)
                runs = []
                for _ in range(5):
                    names: list[str] = []
                    if sol:
                        sol.rewarm()
                    _, ns, passes = odd.odd_chain(tex, "weighted", measure=True, first=first, names=names)
                    if ns is not None:
                        runs.append((ns, passes, names))
                best = sorted(runs, key=lambda r: r[0])[len(runs) // 2] if runs else None
            finally:
                for k, v in saved.items():
                    setattr(odd, k, v)
            got = [gputex.capture_bytes(tex, lv).tobytes() for lv in range(1, tex.levels)]
            first_bytes = first_bytes or got
            timing = (f"{best[0] / 1e6:.3f} ms, {len(best[1])} passes, {sum(best[1]) / 1e6:.3f} ms in them" if best
                      else "no timestamp queries")
            print(f"{size} {name}: {timing} ({'same bytes' if got == first_bytes else 'BYTES DIFFER'})",
                  flush=True)
            if best:
                print("    " + "; ".join(f"{n} {p / 1e6:.3f}" for n, p in zip(best[2], best[1])), flush=True)
        if sol:
            sol.destroy()
        tex.destroy()


if __name__ == "__main__":
    modes = ("--flags", "--tail", "--cols", "--groups")
    args = [a for a in sys.argv[1:] if a not in modes]
    main(args or ["8191", "4095x4097"], next((a for a in sys.argv[1:] if a in modes), ""))
