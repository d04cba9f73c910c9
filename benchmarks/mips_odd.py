"""The cell chain (gputex/mips/odd.py) per pass, for each first grid level, same run and same texture.

    python benchmarks/mips_odd.py [SIZE ...]   (default: 8191 4095x4097)

Prints, per size (rgba8unorm-srgb, weighted alpha, random codes) and first grid ``G(k)`` (levels
before k read the base; ``gputex/mips/cells.py``), the chain's GPU time (timestamp queries, best of
3), whether its bytes equal those of the first ``k`` tried, and every pass's time (the levels in
order; a level from a grid is preceded by the pass that makes the grid). The whole-chain comparison
with the power-of-two sizes and the multi-pass integer chain is ``benchmarks/mips.py``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.mips.odd import odd_chain  # noqa: E402


def main(sizes: list[str]) -> None:
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}")
    for size in sizes:
        w, _, h = size.partition("x")
        width, height = int(w), int(h or w)
        a = np.random.default_rng(1).integers(0, 256, (height, width, 4), np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, precision="fast")
        first_bytes = None
        for first in (3, 4, 5, 2):
            best = None
            for _ in range(3):
                _, ns, passes = odd_chain(tex, "weighted", measure=True, first=first)
                if ns is not None and (best is None or ns < best[0]):
                    best = (ns, passes)
            got = [gputex.capture_bytes(tex, lv).tobytes() for lv in range(1, tex.levels)]
            first_bytes = first_bytes or got
            timing = (f"{best[0] / 1e6:.3f} ms, passes (ms): {[round(p / 1e6, 3) for p in best[1]]}" if best
                      else "no timestamp queries")
            print(f"{size} first {first}: {timing} ({'same bytes' if got == first_bytes else 'BYTES DIFFER'})",
                  flush=True)
        tex.destroy()


if __name__ == "__main__":
    main(sys.argv[1:] or ["8191", "4095x4097"])
