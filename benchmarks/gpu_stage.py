"""Per-image cost of the in-order GPU thread's steps, alone (no codec threads).

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
from gputex.capture import capture_levels  # noqa: E402
from gputex.mips import generate_mips  # noqa: E402
from gputex.upload import upload  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--count", type=int, default=20)
    args = ap.parse_args()
    import wgpu

    gpu = gputex.Session()
    a = np.random.default_rng(0).integers(0, 256, (args.size, args.size, 4), np.uint8)
    image = gputex.from_array(a)
    levels = gputex.layout.mip_count(args.size, args.size) if hasattr(gputex, "layout") else None
    from gputex.layout import mip_count

    levels = mip_count(args.size, args.size)
    times = {"upload": [], "mips": [], "capture": [], "total": []}
    for i in range(args.count + 2):
        t0 = time.perf_counter()
        tex = upload(gpu, image, levels=levels, usage=wgpu.TextureUsage.TEXTURE_BINDING)
        t1 = time.perf_counter()
        generate_mips(tex)
        t2 = time.perf_counter()
        capture_levels(tex, list(range(levels)))
        t3 = time.perf_counter()
        tex.destroy()
        if i >= 2:
            for k, v in (("upload", t1 - t0), ("mips", t2 - t1), ("capture", t3 - t2), ("total", t3 - t0)):
                times[k].append(v * 1e3)
    print(f"{gpu.name}: {args.size}^2 RGBA8, {levels} levels, ms per image (best / median of {args.count}): "
          + ", ".join(f"{k} {min(v):.2f} / {statistics.median(v):.2f}" for k, v in times.items()))


if __name__ == "__main__":
    main()
