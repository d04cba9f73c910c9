"""Peak memory of one C engine chain (gputex/mips/cpu.py's host_chain) beyond its image.

    python benchmarks/host_chain_memory.py [--sizes 8192x8192 8191x8193 4096x4096 4095x4097] [--threads 2]

Per size, in a fresh process (this script runs itself once per size): an RGBA8 sRGB image of
random opaque codes (made in bands: no image-sized temporary), a tiny chain first (tables,
arena), then the peak RSS is reset (``/proc/self/clear_refs``: Linux) and the chain made
(weighted alpha). Prints the RSS before it, the peak during it, the levels it returned and the
difference: what the engine itself held at its peak (stored sums, cell grids, rings; over 2^24
texels ``_mipcpu128``'s 128-bit sums).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _status(key: str) -> float:
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return float("nan")


def one(w: int, h: int, threads: int) -> None:
    import numpy as np

    from gputex.layout import mip_count
    from gputex.mips import cpu

    a = np.empty((h, w, 4), np.uint8)
    rng = np.random.default_rng(1)
    for y in range(0, h, 512):
        a[y:y + 512] = rng.integers(0, 256, a[y:y + 512].shape, np.uint8)
    a[..., 3] = 255
    cpu.host_chain(a[:64, :64].copy(), 4, 8, True, True, 7)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM
    before = _status("VmRSS")
    out = cpu.host_chain(a, 4, 8, True, True, mip_count(w, h), nthreads=threads)
    peak = _status("VmHWM")
    levels = sum(x.nbytes for x in out) / 2**20
    print(f"{w}x{h}: RSS before the chain {before:.0f} MB (image {a.nbytes / 2**20:.0f} MB), peak during it "
          f"{peak:.0f} MB (+{peak - before:.0f}), levels returned {levels:.0f} MB: the engine's own peak "
          f"~{peak - before - levels:.0f} MB; arena kept {cpu.arena_bytes() / 2**20:.0f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["8192x8192", "8191x8193", "4096x4096", "4095x4097"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        w, h = map(int, args.one.split("x"))
        one(w, h, args.threads)
        return
    for size in args.sizes:
        subprocess.run([sys.executable, __file__, "--one", size, "--threads", str(args.threads)], check=True)


if __name__ == "__main__":
    main()
