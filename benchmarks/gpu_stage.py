"""Per-image cost of the in-order GPU thread's step (gputex.capture_stage.capture_gpu_stage), alone (no codecs).

    python benchmarks/gpu_stage.py [--size 2048] [--count 20]

Upload (convert + transfer), mips (record + submit), capture of every level (wait + copy
out), for one RGBA8 sRGB image repeated; milliseconds per image, best and median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.batch import Item  # noqa: E402
from gputex.outputs import OutputNames  # noqa: E402
from gputex.capture_stage import capture_gpu_stage  # noqa: E402
from gputex.pipeline import Decoded, Options, Result  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--count", type=int, default=20)
    args = ap.parse_args()
    import tempfile

    gpu = gputex.Session()
    a = np.random.default_rng(0).integers(0, 256, (args.size, args.size, 4), np.uint8)
    image = gputex.from_array(a)
    opts = Options(mips=True, level="all")
    times: dict[str, list] = {"upload": [], "mips": [], "capture": [], "total": []}
    levels = 0
    with tempfile.TemporaryDirectory() as out:
        for i in range(args.count + 2):
            # the batch's own in-order step (gputex.pipeline): upload, mips, capture of every level,
            # output names reserved; nothing is encoded
            stage = capture_gpu_stage(gpu, OutputNames(out, []), opts)
            result = Result(source="bench.png")
            t0 = time.perf_counter()
            captured = stage(Item("bench.png"), Decoded(image), result)
            total = time.perf_counter() - t0
            assert captured is not None, result.error
            levels = len(captured.outputs)
            if captured.block is not None:
                captured.block.close()
            if i >= 2:
                for k in ("upload", "mips", "capture"):
                    times[k].append(result.timings.get(k, 0.0) * 1e3)
                times["total"].append(total * 1e3)
    print(f"{gpu.name}: {args.size}^2 RGBA8, {levels} levels, ms per image (best / median of {args.count}): "
          + ", ".join(f"{k} {min(v):.2f} / {statistics.median(v):.2f}" for k, v in times.items()))


if __name__ == "__main__":
    main()
