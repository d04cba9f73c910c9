"""Where a batch's time goes: per-stage seconds summed over the inputs, and wall time.

    python benchmarks/stages.py [--count 24] [--size 2048] [--jobs 1 16] [--png fast 1]

Runs ``gputex capture --mips --level all --json`` on a generated photo-like corpus for each
(jobs, png) pair and prints the summed stage timings (decode / upload / mips / capture /
encode) and the wall time, so the in-order GPU thread's share can be read off.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from batch import photo  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    ap.add_argument("--png", nargs="+", default=["fast", "1"])
    args = ap.parse_args()
    import imagecodecs

    work = tempfile.mkdtemp(prefix="gputex-stages-")
    src = os.path.join(work, "in")
    os.makedirs(src)

    def make(i: int) -> None:
        with open(os.path.join(src, f"p{i:03d}.png"), "wb") as f:
            f.write(imagecodecs.png_encode(photo(args.size, args.size, i), level=1))

    with ThreadPoolExecutor() as pool:
        list(pool.map(make, range(args.count)))
    for png in args.png:
        for jobs in args.jobs:
            out = os.path.join(work, f"out-{png}-{jobs}")
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "gputex", "capture", src, "-r", "--mips", "--level", "all",
                                "-o", out, "--json", "--jobs", str(jobs), "--png-compression", png],
                               capture_output=True, text=True, check=True)
            wall = time.perf_counter() - t0
            tot = collections.Counter()
            for line in r.stdout.splitlines():
                for k, v in json.loads(line)["timings"].items():
                    tot[k] += v
            gpu = tot["upload"] + tot["mips"] + tot["capture"]
            print(f"png {png:>4} jobs {jobs:>2}: wall {wall:6.2f} s ({args.count / wall:5.2f} images/s); summed s: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in tot.items())
                  + f"; GPU thread {gpu:.2f} s = {gpu / wall:.0%} of wall")


if __name__ == "__main__":
    main()
