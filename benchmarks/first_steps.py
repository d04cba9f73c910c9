"""What a fresh process's first GPU steps pay (pipelines made, the integer chains' self-checks).

Run with ``GPUTEX_TRACE=FILE``: a session, then a 2048² and a 1537x1999 RGBA8 sRGB image, twice
each, through ``pipeline.upload_image`` with exact box mips (the levels stored where the adapter
takes them, as a batch's GPU step does); prints each step's wall time and the trace's spans by
kind (``pipeline``, ``mips:self-check``, the stages). The second image of each kind is the
baseline: what a step costs once its pipelines and self-check exist. Run it twice on a fresh
machine to see a driver's own shader cache (NVIDIA's, Mesa's) cold and then warm.

    GPUTEX_TRACE=/tmp/t.jsonl python3 benchmarks/first_steps.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    if not os.environ.get("GPUTEX_TRACE"):
        sys.exit("set GPUTEX_TRACE=FILE (the spans are read back from it)")
    t00 = time.time()
    from gputex.device import Session
    from gputex.image import from_array
    from gputex.pipeline import MipOptions, Options, Result, upload_image

    session = Session()
    made = time.time()
    opts = Options(mips=True, mip_options=MipOptions(filter="box"))
    rng = np.random.default_rng(1)
    steps: dict = defaultdict(list)
    for hw in [(2048, 2048), (1999, 1537), (2048, 2048), (1999, 1537)]:
        a = rng.integers(0, 256, hw + (4,), np.uint8)
        t0 = time.time()
        tex = upload_image(session, from_array(a, "srgb", source="x.png"), opts, Result("x.png"))
        session.device.queue.submit([])
        steps[hw].append(1000 * (time.time() - t0))
        tex.destroy()
    print(f"adapter: {session.name}; import and session {1000 * (made - t00):.0f} ms")
    for (h, w), (first, later) in steps.items():
        print(f"{w}x{h}: first step {first:.1f} ms, second {later:.1f} ms ({first / later:.1f}x)")
    spans: dict = defaultdict(list)
    for line in open(os.environ["GPUTEX_TRACE"]):
        r = json.loads(line)
        spans[r["what"]].append((1000 * (r["t1"] - r["t0"]), r))
    for what, items in spans.items():
        print(f"{what:18s} n={len(items):3d} sum={sum(x for x, _ in items):7.1f} ms  "
              + "  ".join(f"{x:.1f}" for x, _ in items[:12]))
    for x, r in spans.get("mips:self-check", []):
        print(f"   self-check {x:.1f} ms: {r.get('chain')} {r.get('format')} storage {r.get('storage') or '-'}")


if __name__ == "__main__":
    main()
